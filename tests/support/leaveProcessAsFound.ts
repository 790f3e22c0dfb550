// The suite runs its files one after another in each worker's process (`isolate: false`):
// whatever a file changed of the process's globals is put back when it ends, so the next file
// starts with real timers, its own mocks and the environment it was given.
import { afterAll, vi } from 'vitest';

afterAll(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
  vi.unstubAllEnvs();
});
