import { getSimplePaths } from '@xstate/graph';
import { describe, expect, it } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import { AgentCommandError } from '../../providers/AgentCommandError';
import { type ChatHarness, eventually, type InteractionModel, type ModelState } from './interactionHarness';

interface ModelPath {
  state: ModelState;
  steps: Array<{ event: { type: string }; state: ModelState }>;
}

function pathsOf<Input>(model: InteractionModel<Input>): Array<{ label: string; input: Input; path: ModelPath }> {
  return model.variants.flatMap(({ label, input }) =>
    (getSimplePaths(model.machine, { input }) as unknown as ModelPath[]).map((path) => ({ label, input, path })),
  );
}

function eventsOf(path: ModelPath): string[] {
  return path.steps.map((step) => step.event.type).filter((type) => type !== 'xstate.init');
}

function describePath<Input>(model: InteractionModel<Input>, path: ModelPath): string {
  const [first, ...rest] = path.steps;
  const start = first === undefined ? '' : model.label(first.state);
  return [start, ...rest.map((step) => `--${step.event.type}--> ${model.label(step.state)}`)].join(' ');
}

/** Tries a user action the runtime must refuse: it rejects `invalid_command`, creates no command, changes nothing. */
function expectRefused(harness: ChatHarness, label: string, attempt: () => Promise<unknown>, reason: RegExp) {
  const before = harness.chat.getSnapshot();
  const pending = attempt();
  const after = harness.chat.getSnapshot();
  expect(after.agentState, label).toBe(before.agentState);
  expect(after.commandStates, label).toBe(before.commandStates);
  expect(after.latestCommandByAction, label).toBe(before.latestCommandByAction);
  return pending.then(
    () => expect.fail(`${label} was accepted`),
    (error: unknown) => {
      expect(AgentCommandError.isInstance(error), label).toBe(true);
      expect((error as AgentCommandError).code, label).toBe('invalid_command');
      expect((error as AgentCommandError).message, label).toMatch(reason);
    },
  );
}

/** What holds in every state: no protocol issue, and only the path's own commands reached the provider. */
function expectInvariants(harness: ChatHarness): void {
  expect(harness.state().issues).toEqual([]);
  for (const call of harness.calls) expect(harness.commandIds).toContain(call.commandId);
}

async function checkState<Input>(model: InteractionModel<Input>, harness: ChatHarness, state: ModelState) {
  model.expectState(harness, state);
  expectInvariants(harness);
  // All refusals are tried before any of them is awaited: a submitting state may not last.
  const probes = model.refusals(harness, state).map(({ action, reason }) => {
    const attempt = model.actions[action];
    if (attempt === undefined) throw new Error(`${model.name} has no action ${action}`);
    return expectRefused(harness, `${action} in ${model.label(state)}`, () => attempt(harness, state), reason);
  });
  await Promise.all(probes);
  expectInvariants(harness);
}

async function playPath<Input>(model: InteractionModel<Input>, harness: ChatHarness, path: ModelPath): Promise<void> {
  const [first, ...rest] = path.steps;
  if (first === undefined) throw new Error('a path starts with xstate.init');
  await eventually(() => model.expectState(harness, first.state));
  await checkState(model, harness, first.state);
  let from = first.state;
  for (const step of rest) {
    const type = step.event.type;
    const userAction = model.actions[type];
    if (userAction !== undefined) {
      // Checked at once: with the local provider, a submitting command is taken within a few ticks.
      harness.act(type, () => userAction(harness, from));
    } else {
      const runtimeStep = model.runtime[type];
      if (runtimeStep === undefined) throw new Error(`${model.name} cannot carry out ${type}`);
      await runtimeStep(harness, from);
      await eventually(() => model.expectState(harness, step.state));
    }
    await checkState(model, harness, step.state);
    from = step.state;
  }
}

function finalStates(machine: AnyStateMachine): string[] {
  return Object.values(machine.root.states)
    .filter((node) => node.type === 'final')
    .map((node) => node.key);
}

/**
 * Declares a model's tests: one that its paths cover the model and its backends, then one per
 * path and backend that can play it, which plays the path on a fresh chat and checks every state.
 */
export function describeModel<Input>(model: InteractionModel<Input>): void {
  describe(`model-based commands: ${model.name}`, () => {
    const plans = pathsOf(model);

    it('has paths that reach every final state and take every event, each played by a backend', () => {
      expect(plans.length).toBeGreaterThan(0);
      const reached = new Set(plans.map(({ path }) => path.state.value));
      for (const final of finalStates(model.machine)) {
        expect(reached, `${model.name}: final state ${final} is never reached`).toContain(final);
      }
      const taken = new Set(plans.flatMap(({ path }) => eventsOf(path)));
      for (const event of model.machine.root.events)
        expect(taken, `${model.name}: ${event} is never taken`).toContain(event);
      for (const { path } of plans) {
        expect(model.backends.some((backend) => backend.plays(eventsOf(path)))).toBe(true);
      }
      for (const backend of model.backends) {
        const played = plans.filter(({ path }) => backend.plays(eventsOf(path))).length;
        console.log(`model-based commands, ${model.name}: ${plans.length} paths, ${played} on the ${backend.name}`);
        expect(played).toBeGreaterThan(0);
      }
    });

    for (const backend of model.backends) {
      for (const { label, input, path } of plans) {
        if (!backend.plays(eventsOf(path))) continue;
        it(`${backend.name}, ${label}: ${describePath(model, path)}`, async () => {
          const harness = await backend.start(input, eventsOf(path));
          try {
            await playPath(model, harness, path);
          } finally {
            await harness.close();
          }
        });
      }
    }
  });
}
