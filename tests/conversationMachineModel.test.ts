import { getShortestPaths, getSimplePaths } from '@xstate/graph';
import { describe, expect, it } from 'vitest';
import { type AnyActorRef, createActor, fromPromise, fromTransition, type TransitionSnapshot } from 'xstate';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import { commandLaneMachine } from '../runtime/commandLaneMachine';
import { createXChatRuntime } from '../runtime/createXChatRuntime';
import { commandLaneId, type XChatRuntimeEvent, xChatRuntimeMachine } from '../runtime/xChatRuntimeMachine';
import { createRemoteRuntime, requestRunWaitingOnTool } from './support/remoteRuntime';
import { until } from './support/until';

/**
 * The conversation machine (`xChatRuntimeMachine`) as a graph, with its children. Its lanes
 * and its connection are real actors, which `@xstate/graph`'s pure traversal does not run, so
 * the model's state is the list of events applied so far, replayed into a real actor at each
 * step; a state is the conversation's own state, its children and each child's state. The
 * lanes' `execute` never settles: a command taken stays in flight, as one sent to a runtime
 * that has not answered yet.
 */

const inFlight = fromPromise<void, { commandId: string }>(() => new Promise<void>(() => undefined));
const machine = xChatRuntimeMachine.provide({
  actors: { commandLane: commandLaneMachine.provide({ actors: { execute: inFlight } }) },
});

const modelEvents: Record<string, XChatRuntimeEvent> = {
  restoreSettled: { type: 'restore.settled' },
  restoreStarted: { type: 'restore.started' },
  restoreDone: { type: 'restore.done', resuming: 0, stranded: 0 },
  approve: { type: 'lane.enqueue', runId: 'r1', commandId: 'c1', cancels: false },
  cancel: { type: 'lane.enqueue', runId: 'r1', commandId: 'c2', cancels: true },
  cancelSettled: { type: 'lane.cancel_settled', runId: 'r1' },
  closeLane: { type: 'lane.close', runId: 'r1' },
  connecting: { type: 'stream.connecting', resume: false },
  connected: { type: 'stream.connected' },
  closed: { type: 'stream.closed' },
};

function replay(checkpointed: boolean, list: readonly XChatRuntimeEvent[]) {
  const actor = createActor(machine, { input: { sessionId: 's1', checkpointed } }).start();
  for (const event of list) actor.send(event);
  return actor;
}

/** The conversation's state value, then each child by id with its state value. */
function describeActor(actor: ReturnType<typeof replay>): string {
  const snapshot = actor.getSnapshot();
  const children = Object.entries(snapshot.children as Record<string, AnyActorRef | undefined>)
    .filter(([, child]) => child !== undefined)
    .map(([id, child]) => `${id}=${JSON.stringify((child as AnyActorRef).getSnapshot().value ?? null)}`)
    .sort();
  return `${JSON.stringify(snapshot.value)} ${children.join(' ')}`;
}

function modelOf(checkpointed: boolean) {
  return fromTransition(
    (state: { events: XChatRuntimeEvent[]; description: string }, event: XChatRuntimeEvent) => {
      const events = [...state.events, event];
      return { events, description: describeActor(replay(checkpointed, events)) };
    },
    () => ({ events: [] as XChatRuntimeEvent[], description: describeActor(replay(checkpointed, [])) }),
  );
}

const serializeState = (snapshot: TransitionSnapshot<{ description: string }>) => snapshot.context.description;
const alphabet = Object.values(modelEvents);

describe('model-based: the conversation machine', () => {
  for (const checkpointed of [false, true]) {
    it(`reaches every state it can ${checkpointed ? 'with' : 'without'} a checkpoint, its children as the paths say`, () => {
      const paths = getShortestPaths(modelOf(checkpointed), { events: alphabet, serializeState });
      console.log(`model-based conversation (checkpointed: ${checkpointed}): ${paths.length} shortest paths`);
      const described = paths.map((path) => path.state.context.description);
      // Restoring first with a checkpoint, ready at once without; a ready one never restores again.
      expect(described.some((text) => text.startsWith('"restoring"'))).toBe(checkpointed);
      expect(described.some((text) => text.startsWith('"ready"'))).toBe(true);
      // The lane of a run: spawned by its first command, executing, cancelling, closed again.
      expect(described.some((text) => text.includes(`${commandLaneId('r1')}={"admission":"cancelling"`))).toBe(true);
      expect(described.some((text) => /connection="connected"/.test(text))).toBe(true);
      for (const text of described) expect(text).toMatch(/ connection=.* session=\{\}/);
      expect(paths.length).toBeGreaterThanOrEqual(checkpointed ? 12 : 8);
      // Every path replayed into a fresh actor ends where the graph says.
      for (const path of paths) {
        expect(describeActor(replay(checkpointed, path.state.context.events))).toBe(path.state.context.description);
      }
    });
  }

  it('leaves restoring only by restore.settled, and a closed lane only by a new command', () => {
    const paths = getSimplePaths(modelOf(true), {
      events: [modelEvents.restoreSettled, modelEvents.approve, modelEvents.closeLane] as XChatRuntimeEvent[],
      serializeState,
    });
    console.log(`model-based conversation (restore and lanes): ${paths.length} simple paths`);
    expect(paths.length).toBeGreaterThanOrEqual(5);
    for (const path of paths) {
      let restoring = true;
      for (const step of path.steps) {
        const now = step.state.context.description;
        if (restoring && now.startsWith('"ready"')) {
          expect(step.event.type).toBe('restore.settled');
          restoring = false;
        }
        if (now.includes('lane:r1=')) expect(step.event.type === 'lane.close').toBe(false);
      }
    }
  });

  it('agrees with a real runtime: restoring until the checkpoint is read, a lane per run with commands, closed when the run finishes', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({
      provider: remote.provider,
      sessionId: 'session-1',
      autoContinue: false,
      checkpointStorage: createMemoryAgentCheckpointStorage(),
    });
    const described = () => describeActor(chat.actor as unknown as ReturnType<typeof replay>);
    expect(described()).toBe(describeActor(replay(true, [modelEvents.restoreStarted as XChatRuntimeEvent])));
    await chat.restored;
    const ready = [
      modelEvents.restoreStarted,
      modelEvents.restoreDone,
      modelEvents.restoreSettled,
    ] as XChatRuntimeEvent[];
    expect(described()).toBe(describeActor(replay(true, ready)));
    const run = await requestRunWaitingOnTool(chat, remote);
    const submitted = chat.agentActions.submitToolResult({ runId: run.runId, toolCallId: 'call-1', result: 1 });
    expect(described()).toMatch(new RegExp(`${commandLaneId(run.runId)}=`));
    await submitted;
    // The run had all it waited for: its lane is closed, as `lane.close` closes it in the model.
    await until(() => !/lane:/.test(described()), 'the lane to close');
    expect(described()).toBe(describeActor(replay(true, ready)));
  });
});
