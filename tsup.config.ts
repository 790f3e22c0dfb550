import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'index.ts',
    providers: 'providers/index.ts',
    transports: 'transports/index.ts',
    testing: 'providers/testing/index.ts',
  },
  external: ['vitest', 'ws'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  treeshake: true,
});
