import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'protocol/**/*.test.ts',
      'machines/**/*.test.ts',
      'providers/**/*.test.ts',
      'transports/**/*.test.ts',
      'react/**/*.test.ts',
      'tests/**/*.test.ts',
    ],
    testTimeout: 60_000,
  },
});
