import type { Options } from 'tsup';

/** The package's entries, by the name of their files in dist/. */
export const entry = {
  index: 'index.ts',
  providers: 'providers/index.ts',
  'providers-agui': 'providers/agui/index.ts',
  'providers-openai': 'providers/openai/index.ts',
  'providers-anthropic': 'providers/anthropic/index.ts',
  'providers-ai-sdk': 'providers/ai-sdk/index.ts',
  'providers-agent-event': 'providers/agent-event/index.ts',
  transports: 'transports/index.ts',
  testing: 'providers/testing/index.ts',
  runtime: 'runtime/index.ts',
  checkpoint: 'checkpoint/index.ts',
  'checkpoint-node': 'checkpoint/node.ts',
  react: 'react/index.ts',
  server: 'server/index.ts',
  'server-redis': 'server/redis/index.ts',
};

export default {
  entry,
  external: ['vitest', 'ws', '@ag-ui/core', 'react', 'idb-keyval', 'redis'],
  format: ['esm', 'cjs'],
  // One copy of each module across entries, in both formats: code that two entries share
  // goes to a chunk they both import, so `agent-machines/providers` and `agent-machines` see the
  // same `AgentError` class (and the same xstate and zod) instead of one copy each.
  splitting: true,
  // The declarations are built by scripts/build.ts (`npm run build`), at the same time as this.
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  treeshake: true,
} satisfies Options;
