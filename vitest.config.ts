import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest, longest first: started early, they run beside the many short
 * files instead of after them. On a fresh clone vitest knows no durations and would start the
 * largest files first, which is not the same thing. The demo server's forwarding test is not
 * among them: the demo page is built once for the run (`tests/browser/demoPageBuild.ts`), and
 * started early it would only wait for that build.
 */
const SLOW_FILES = [
  'tests/fuzz/',
  'tests/browser/demo.browser.test.ts',
  'tests/browser/demoInspect.browser.test.ts',
  'tests/browser/demoProviders.browser.test.ts',
  'tests/browser/reloadResume.browser.test.ts',
  'tests/browser/demoTruth.browser.test.ts',
  'tests/packagingTypes.test.ts',
  'tests/packaging.test.ts',
  'tests/packagingTarball.test.ts',
  'tests/browser/demoHost.browser.test.ts',
  'tests/browser/useXChat.browser.test.ts',
  'server/redis/',
  'tests/demoServerCli.test.ts',
  'tests/serverRedis.e2e.test.ts',
  'tests/properties.test.ts',
  'tests/modelBased.test.ts',
];

class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const index = SLOW_FILES.findIndex((slow) => file.moduleId.includes(`/${slow}`));
      return index === -1 ? SLOW_FILES.length : index;
    };
    // Array.prototype.sort is stable: the other files keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}

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
    // a wrong `expectTypeOf` or an unused `@ts-expect-error` fails `vitest run`. vitest runs
    // `tsc --noEmit -p tsconfig.json`, the whole project, so a type error anywhere fails the
    // run too: `npm test` needs no `npm run typecheck` of its own (one tsc pass, not two).
    typecheck: {
      enabled: true,
      include: ['**/*.test-d.ts'],
      tsconfig: './tsconfig.json',
      ignoreSourceErrors: false,
    },
    // A ceiling, not a measure: tests wait for events, and a loaded machine only makes them slower.
    testTimeout: 120_000,
    // Hooks start Chromium, redis-server or a Vite build: seconds on a quiet machine, more on a
    // loaded one. A hook that hangs still fails, after a minute.
    hookTimeout: 60_000,
    // vitest's default is one worker per core less one: a single worker on 2 cores, running
    // every file in turn. The slowest files mostly wait on another process (Chromium, a Vite
    // build, redis-server, npm), so one worker more than cores keeps the cores busy meanwhile.
    maxWorkers: availableParallelism() + 1,
    // A worker runs its files one after another in one module graph, not each in a fresh one:
    // the suite imports xstate, zod, React and the library once per worker instead of once per
    // file (about half of vitest's CPU time on 2 cores went to imports). Every file leaves the
    // process as it found it: servers closed, real timers restored, nothing global stubbed.
    isolate: false,
    sequence: { sequencer: SlowFilesFirst },
    // expect.poll waits for what it asserts; its default second is too short for a browser
    // page or a server on a loaded machine. A value that never comes still fails, later.
    expect: { poll: { timeout: 20_000 } },
    // Measured by `npm test` (`vitest run --coverage`), not by a development run of a few files:
    // a subset would fail the thresholds, which hold for the whole suite.
    coverage: {
      provider: 'v8',
      include: [
        'protocol/**/*.{ts,tsx}',
        'machines/**/*.{ts,tsx}',
        'providers/**/*.{ts,tsx}',
        'transports/**/*.{ts,tsx}',
        'react/**/*.{ts,tsx}',
        'runtime/**/*.{ts,tsx}',
        'checkpoint/**/*.{ts,tsx}',
        'server/**/*.{ts,tsx}',
      ],
      exclude: ['**/*.test.{ts,tsx}', '**/*.test-d.ts', '**/*.d.ts', '**/__fixtures__/**'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: './coverage',
      // Seed 003 §20.5: at least 85% of the code, and every branch of the command and
      // checkpoint state transitions: checkpoint/, and a command's way from the runtime's
      // runner through its run's lane and its state to the provider (and to an agent-machines
      // host). A glob's figure is the sum of the files it matches.
      thresholds: {
        statements: 85,
        branches: 85,
        'checkpoint/**': { branches: 100 },
        'runtime/createCommandRunner.ts': { branches: 100 },
        'runtime/commandLaneMachine.ts': { branches: 100 },
        'runtime/commandBook.ts': { branches: 100 },
        'providers/runAgentCommand.ts': { branches: 100 },
        'providers/agent-event/executeAgentHostCommand.ts': { branches: 100 },
      },
    },
    setupFiles: ['./tests/support/fastCheckSeed.ts', './tests/support/leaveProcessAsFound.ts'],
    // A folder for the demo page, which the files that serve it build once between them.
    globalSetup: ['./tests/browser/demoPageBuild.ts'],
  },
});
