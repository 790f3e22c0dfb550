import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'protocol/**/*.test.ts',
      'machines/**/*.test.ts',
      'providers/**/*.test.ts',
      'transports/**/*.test.ts',
      'react/**/*.test.ts',
      'react/**/*.test.tsx',
      'runtime/**/*.test.ts',
      'checkpoint/**/*.test.ts',
      'server/**/*.test.ts',
      'tests/**/*.test.ts',
    ],
    // Type tests (`*.test-d.ts`, next to the code) run through tsc with the other tests:
    // a wrong `expectTypeOf` or an unused `@ts-expect-error` fails `vitest run`. Errors in
    // the library's own files are `npm run typecheck`'s to report, once.
    typecheck: {
      enabled: true,
      include: ['**/*.test-d.ts'],
      tsconfig: './tsconfig.json',
      ignoreSourceErrors: true,
    },
    testTimeout: 60_000,
    setupFiles: ['./tests/support/fastCheckSeed.ts'],
  },
});
