import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'index.ts',
    providers: 'providers/index.ts',
    'providers-agui': 'providers/agui/index.ts',
    'providers-openai': 'providers/openai/index.ts',
    'providers-anthropic': 'providers/anthropic/index.ts',
    transports: 'transports/index.ts',
    testing: 'providers/testing/index.ts',
    react: 'react/index.ts',
  },
  external: ['vitest', 'ws', '@ag-ui/core', 'react'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  treeshake: true,
});
