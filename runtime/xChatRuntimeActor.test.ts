import { describe, expect, it } from 'vitest';
import { type AnyActorRef, type InspectionEvent, waitFor } from 'xstate';
import { createMemoryAgentCheckpointStorage } from '../checkpoint/createMemoryAgentCheckpointStorage';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import { createRemoteRuntime, requestCompletedRun, requestRunWaitingOnTool } from '../tests/support/remoteRuntime';
import { until } from '../tests/support/until';
import { createXChatRuntime } from './createXChatRuntime';
import { commandLaneId } from './xChatRuntimeMachine';

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

async function settle() {
  for (let index = 0; index < 5; index += 1) await tick();
}

/** An approval command for run `runId`'s approval `a-1`, to ask the store whether it would take one now. */
function approvalCommand(runId: string) {
  return createAgentCommandFactory({ sessionId: 'session-1', runId }).create('approval.resolve', {
    approvalId: 'a-1',
    decision: 'approved',
  });
}

function childrenOf(chat: { actor: { getSnapshot(): { children: unknown } } }): Record<string, AnyActorRef> {
  return chat.actor.getSnapshot().children as Record<string, AnyActorRef>;
}

describe('the interaction runtime as an actor', () => {
  it('is ready at once without a checkpoint storage, restoring until the restore is over with one', async () => {
    const remote = createRemoteRuntime();
    const plain = createXChatRuntime({ provider: remote.provider });
    expect(plain.actor.getSnapshot().value).toBe('ready');

    const storage = createMemoryAgentCheckpointStorage();
    const restored = createXChatRuntime({
      provider: remote.provider,
      sessionId: 'session-1',
      checkpointStorage: storage,
    });
    expect(restored.actor.getSnapshot().value).toBe('restoring');
    expect(restored.getSnapshot().connectionState).toBe('restoring');
    await expect(restored.agentActions.retryTool({ runId: 'run-1', toolCallId: 'call-1' })).rejects.toMatchObject({
      code: 'restoring',
    });
    await restored.restored;
    expect(restored.actor.getSnapshot().value).toBe('ready');
    expect(restored.getSnapshot().connectionState).toBe('idle');
  });

  it('has the connection machine as its child, which follows the streams', async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    const connection = childrenOf(chat).connection;
    expect(connection?.getSnapshot().value).toBe('idle');
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Go' });
    const run = await started;
    run.push((events) => [events.emit('message.started', { messageId: 'm', role: 'assistant' })]);
    await settle();
    expect(childrenOf(chat).connection).toBe(connection);
    expect(connection?.getSnapshot().value).toBe('connected');
    expect(chat.getSnapshot().connectionState).toBe('connected');
    run.push((events) => [events.emit('run.completed', {})]);
    run.end();
    await result;
    await settle();
    expect(connection?.getSnapshot().value).toBe('idle');
  });

  it('tells its listeners in a task of their own, after the change; its actor takes no event per streamed change', async () => {
    const remote = createRemoteRuntime();
    /** The events the conversation's own actor took, but for the streams' and the lanes'. */
    const taken: string[] = [];
    const inspect = (event: InspectionEvent) => {
      if (event.type !== '@xstate.event' || (event.actorRef as AnyActorRef).id !== 'xChat') return;
      if (!/^(stream|restore|lane|xstate)\./.test(event.event.type)) taken.push(event.event.type);
    };
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1', inspect });
    const told: unknown[] = [];
    const unsubscribe = chat.subscribe(() => told.push(chat.getSnapshot()));
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Go' });
    const run = await started;
    run.push((events) => [
      events.emit('message.started', { messageId: 'm', role: 'assistant' }),
      events.emit('message.delta', { messageId: 'm', delta: 'Hello' }),
    ]);
    // Dispatched, and not told yet: the listeners hear of it in a task of their own.
    const before = told.length;
    await tick();
    expect(told.length).toBeGreaterThan(before);
    run.push((events) => [events.emit('run.completed', {})]);
    run.end();
    await result;
    await settle();
    expect(chat.getSnapshot().messages.at(-1)?.message.content).toBe('Hello');
    expect(chat.getSnapshot().isRequesting).toBe(false);
    unsubscribe();

    // Nobody watches: nobody is told, and the view read afterwards has the whole run.
    const count = told.length;
    await requestCompletedRun(chat, remote, 'Again');
    await settle();
    expect(told.length).toBe(count);
    expect(chat.getSnapshot().messages.map(({ message }) => message.content)).toEqual(['Go', 'Hello', 'Again']);
    // The view is selected from the actors, never sent to one.
    expect(taken).toEqual([]);
  });

  it("lets xstate's waitFor follow a child of the conversation, and a listener subscribed after a change see that change", async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    await requestCompletedRun(chat, remote, 'Go');
    await settle();
    const connection = childrenOf(chat).connection as AnyActorRef;
    await expect(waitFor(connection, (snapshot) => snapshot.value === 'idle', { timeout: 300 })).resolves.toBeDefined();

    // A change, then a listener in the same task: the task's notification reaches it.
    const next = remote.nextRun();
    const running = chat.request({ prompt: 'Again' });
    let calls = 0;
    const unsubscribe = chat.subscribe(() => {
      calls += 1;
    });
    await tick();
    expect(calls).toBeGreaterThan(0);
    (await next).push((events) => [events.emit('run.completed', {})]);
    (await next).end();
    await running;
    unsubscribe();
  });

  it("spawns a run's command lane on its first command and stops it once the run has finished", async () => {
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1', autoContinue: false });
    const run = await requestRunWaitingOnTool(chat, remote);
    expect(childrenOf(chat)[commandLaneId(run.runId)]).toBeUndefined();

    // A client tool result is settled at once: the run finishes while its lane executes it.
    const lanes: string[][] = [];
    const subscription = chat.actor.subscribe((snapshot) => {
      lanes.push(Object.keys(snapshot.children).filter((id) => id.startsWith('lane:')));
    });
    const submitted = chat.agentActions.submitToolResult({ runId: run.runId, toolCallId: 'call-1', result: 14 });
    const lane = childrenOf(chat)[commandLaneId(run.runId)];
    await submitted;
    await settle();
    subscription.unsubscribe();
    expect(lanes).toContainEqual([commandLaneId(run.runId)]);
    // Stopped once it had finished its command, not in the middle of it.
    expect(lane?.getSnapshot()).toMatchObject({
      status: 'stopped',
      value: { admission: 'accepting', execution: 'idle' },
    });
    // The waiting run had all it waited for and, without autoContinue, has finished: its lane is stopped.
    expect(lanes.at(-1)).toEqual([]);
    expect(Object.keys(childrenOf(chat)).sort()).toEqual(['connection', 'session']);
  });

  it("registers a run's command lane in the system as `lane:<runId>` while it lives, and a lane spawned again under the same id", async () => {
    const remote = createRemoteRuntime({
      *onCommand(command, run) {
        if (command.type === 'approval.resolve') {
          yield run.events.emit('approval.resolved', { approvalId: command.payload.approvalId, decision: 'approved' });
        }
      },
    });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Delete the reports' });
    const run = await started;
    const id = commandLaneId(run.runId);
    run.push((events) => [
      events.emit('approval.requested', { approvalId: 'a-1' }),
      events.emit('approval.requested', { approvalId: 'a-2' }),
    ]);
    await until(() => chat.store.can(approvalCommand(run.runId)), 'the approvals to wait');
    expect(chat.actor.system.get(id)).toBeUndefined();

    const first = chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'a-1', decision: 'approved' });
    const lane = childrenOf(chat)[id];
    expect(lane).toBeDefined();
    expect(chat.actor.system.get(id)).toBe(lane);
    await first;
    await settle();

    // Stopped from outside, it leaves the system at once; the run's next command spawns its lane again.
    chat.actor.send({ type: 'lane.close', runId: run.runId });
    expect(chat.actor.system.get(id)).toBeUndefined();
    const second = chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'a-2', decision: 'approved' });
    const again = childrenOf(chat)[id];
    expect(again).toBeDefined();
    expect(again).not.toBe(lane);
    expect(chat.actor.system.get(id)).toBe(again);
    await second;
    expect(chat.actor.getSnapshot().status).toBe('active');
    const { approvals } = chat.getSnapshot().agentState;
    expect(Object.values(approvals).map(({ id: approvalId, status }) => [approvalId, status])).toEqual([
      ['a-1', 'resolved'],
      ['a-2', 'resolved'],
    ]);

    // The run has finished with no command left: its lane is stopped and gone from the system.
    run.push((events) => [events.emit('run.completed', {})]);
    run.end();
    expect((await result).status).toBe('completed');
    await settle();
    expect(childrenOf(chat)[id]).toBeUndefined();
    expect(chat.actor.system.get(id)).toBeUndefined();
  });

  it("takes a command sent from inside the store's listener, while the stream is dispatching, in order", async () => {
    const remote = createRemoteRuntime({
      *onCommand(command, run) {
        if (command.type === 'approval.resolve') {
          yield run.events.emit('approval.resolved', { approvalId: command.payload.approvalId, decision: 'approved' });
        }
      },
    });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1' });
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Delete the report' });
    const run = await started;
    const decided: Array<Promise<unknown>> = [];
    // The store's listener is called as each event is dispatched: what it sends waits its turn.
    const unsubscribe = chat.store.subscribe(() => {
      const waiting = Object.values(chat.store.getSnapshot().approvals).filter(({ status }) => status === 'waiting');
      if (waiting.length < 2 || decided.length > 0) return;
      for (const approval of waiting) {
        decided.push(
          chat.agentActions.resolveApproval({ runId: run.runId, approvalId: approval.id, decision: 'approved' }),
        );
      }
    });
    run.push((events) => [
      events.emit('approval.requested', { approvalId: 'first' }),
      events.emit('approval.requested', { approvalId: 'second' }),
    ]);
    await until(() => decided.length === 2, 'the listener to decide');
    await Promise.all(decided);
    unsubscribe();
    expect(remote.calls.map((command) => command.payload)).toEqual([
      { approvalId: 'first', decision: 'approved' },
      { approvalId: 'second', decision: 'approved' },
    ]);
    const { approvals } = chat.getSnapshot().agentState;
    expect(Object.values(approvals).map(({ id, status }) => [id, status])).toEqual([
      ['first', 'resolved'],
      ['second', 'resolved'],
    ]);
    run.push((events) => [events.emit('run.completed', {})]);
    run.end();
    expect((await result).status).toBe('completed');
  });

  it("refuses a command sent behind a cancel from inside the store's listener, as it would outside", async () => {
    // The runtime takes the cancel and never confirms it: the cancel times out.
    const remote = createRemoteRuntime({ *onCommand() {} });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1', cancelTimeoutMs: 30 });
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Delete the report' });
    const run = await started;
    const sent: Array<Promise<unknown>> = [];
    const unsubscribe = chat.store.subscribe(() => {
      const waiting = Object.values(chat.store.getSnapshot().approvals).some(({ status }) => status === 'waiting');
      if (!waiting || sent.length > 0) return;
      sent.push(chat.agentActions.cancelRun({ runId: run.runId }).catch((error: unknown) => error));
      sent.push(
        chat.agentActions
          .resolveApproval({ runId: run.runId, approvalId: 'a-1', decision: 'approved' })
          .catch((error: unknown) => error),
      );
    });
    run.push((events) => [events.emit('approval.requested', { approvalId: 'a-1' })]);
    await until(() => sent.length === 2, 'the listener to act');
    unsubscribe();
    const [cancelled, approved] = await Promise.all(sent);
    expect(approved).toMatchObject({ code: 'invalid_command', message: expect.stringMatching(/being cancelled/) });
    expect(cancelled).toMatchObject({ code: 'interrupted' });
    expect(remote.calls.map(({ type }) => type)).toEqual(['run.cancel']);
    // The cancel failed: the lane takes commands again, and the approval can be answered.
    await settle();
    expect(Object.values(chat.getSnapshot().commandStates).filter(({ status }) => status === 'submitting')).toEqual([]);
    const answering = chat.agentActions.resolveApproval({ runId: run.runId, approvalId: 'a-1', decision: 'approved' });
    await until(() => remote.calls.length === 2, 'the approval to reach the runtime');
    expect(remote.calls.map(({ type }) => type)).toEqual(['run.cancel', 'approval.resolve']);
    chat.abort();
    await answering.catch(() => undefined);
    await result;
  });

  it("refuses a command sent behind a cancel from inside the actor's own observer, before the cancel reached its lane", async () => {
    // The runtime takes the cancel and never confirms it: the cancel times out.
    const remote = createRemoteRuntime({ *onCommand() {} });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1', cancelTimeoutMs: 30 });
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Delete the report' });
    const run = await started;
    run.push((events) => [events.emit('approval.requested', { approvalId: 'a-1' })]);
    await until(() => chat.store.can(approvalCommand(run.runId)), 'the approval to wait');
    // The actor's observers are called while it takes an event (here a second request's stream
    // opening): the cancel sent from one waits in the actor's mailbox, not yet in its lane.
    const sent: Array<Promise<unknown>> = [];
    const subscription = chat.actor.subscribe(() => {
      if (sent.length > 0) return;
      sent.push(chat.agentActions.cancelRun({ runId: run.runId }).catch((error: unknown) => error));
      sent.push(
        chat.agentActions
          .resolveApproval({ runId: run.runId, approvalId: 'a-1', decision: 'approved' })
          .catch((error: unknown) => error),
      );
    });
    const second = remote.nextRun();
    const other = chat.request({ prompt: 'And the other one' });
    await until(() => sent.length === 2, 'the observer to act');
    subscription.unsubscribe();
    const [cancelled, approved] = await Promise.all(sent);
    expect(approved).toMatchObject({ code: 'invalid_command', message: expect.stringMatching(/being cancelled/) });
    expect(cancelled).toMatchObject({ code: 'interrupted' });
    expect(remote.calls.map(({ type }) => type)).toEqual(['run.cancel']);
    chat.abort();
    (await second).end();
    await Promise.all([result, other]);
  });

  it('keeps working when a lane is stopped from outside while it executes a cancel', async () => {
    const remote = createRemoteRuntime({ *onCommand() {} });
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1', cancelTimeoutMs: 30 });
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Go' });
    const run = await started;
    const cancel = chat.agentActions.cancelRun({ runId: run.runId }).catch((error: unknown) => error);
    chat.actor.send({ type: 'lane.close', runId: run.runId });
    expect(await cancel).toMatchObject({ code: 'interrupted' });
    await settle();
    expect(chat.actor.getSnapshot().status).toBe('active');
    chat.abort();
    expect((await result).status).toBe('cancelled');
    expect(chat.getSnapshot().connectionState).toBe('idle');
  });

  it("keeps its root and the store's `session` actor through a reset of the store and a restore from a checkpoint", async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const remote = createRemoteRuntime();
    const chat = createXChatRuntime({
      provider: remote.provider,
      sessionId: 'session-1',
      checkpointStorage: storage,
      autoContinue: false,
    });
    const root = chat.actor;
    const session = chat.actor.system.get('session') as AnyActorRef;
    expect(session).toBe(childrenOf(chat).session);
    expect(chat.actor.system.get('xChat')).toBe(root);
    await chat.restored;
    const run = await requestRunWaitingOnTool(chat, remote);
    await chat.flushCheckpoint();
    const runActorId = `run:${run.runId}`;
    // The run waits for its tool's result: its actor is live, under the session.
    expect(chat.actor.system.get(runActorId)).toBe(session.getSnapshot().children[runActorId]);
    expect(chat.actor.system.get(runActorId)).toBeDefined();

    chat.store.reset();
    expect(chat.getSnapshot().agentState.runs).toEqual({});
    expect(chat.actor.system.get(runActorId)).toBeUndefined();
    expect(chat.actor).toBe(root);
    expect(chat.actor.system.get('xChat')).toBe(root);
    expect(root.id).toBe('xChat');
    expect(chat.actor.system.get('session')).toBe(session);
    expect(childrenOf(chat).session).toBe(session);
    expect(session.getSnapshot().status).toBe('active');

    // A conversation restored from the checkpoint: the actors it starts with are the ones it keeps.
    const restored = createXChatRuntime({
      provider: remote.provider,
      sessionId: 'session-1',
      checkpointStorage: storage,
      autoContinue: false,
    });
    const restoredRoot = restored.actor;
    const restoredSession = restored.actor.system.get('session') as AnyActorRef;
    expect(restoredRoot.getSnapshot().value).toBe('restoring');
    await restored.restored;
    expect(restored.getSnapshot().agentState.runs[run.runId]?.status).toBe('completed');
    expect(restored.actor).toBe(restoredRoot);
    expect(restored.actor.system.get('xChat')).toBe(restoredRoot);
    expect(restoredRoot.id).toBe('xChat');
    expect(restored.actor.system.get('session')).toBe(restoredSession);
    expect(childrenOf(restored).session).toBe(restoredSession);
    // The run restored waiting for input has its actor again, under the same session actor.
    expect(restored.actor.system.get(runActorId)).toBeDefined();
    expect(restored.actor.system.get(runActorId)).toBe(restoredSession.getSnapshot().children[runActorId]);
  });

  it("is one actor system with the store's actors, all shown to `inspect`", async () => {
    const remote = createRemoteRuntime({
      *onCommand(command, run) {
        if (command.type === 'approval.resolve') {
          yield run.events.emit('approval.resolved', { approvalId: command.payload.approvalId, decision: 'approved' });
        }
      },
    });
    const ids = new Set<string>();
    const systems = new Set<unknown>();
    const inspect = (event: InspectionEvent) => {
      if (event.type !== '@xstate.actor') return;
      ids.add((event.actorRef as AnyActorRef).id);
      systems.add((event.actorRef as AnyActorRef).system);
    };
    const chat = createXChatRuntime({ provider: remote.provider, sessionId: 'session-1', inspect });
    const started = remote.nextRun();
    const result = chat.request({ prompt: 'Delete the report' });
    const run = await started;
    run.push((events) => [events.emit('approval.requested', { approvalId: 'approval-1' })]);
    await settle();
    const resolving = chat.agentActions.resolveApproval({
      runId: run.runId,
      approvalId: 'approval-1',
      decision: 'approved',
    });
    await resolving;
    run.push((events) => [events.emit('run.completed', {})]);
    run.end();
    await result;
    expect(ids).toContain('xChat');
    expect(ids).toContain('connection');
    expect(ids).toContain(commandLaneId(run.runId));
    // The store's session actor, its run and the run's entities: one system, the conversation's.
    expect(ids).toContain('session');
    expect(ids).toContain(`run:${run.runId}`);
    expect(ids).toContain('approval:approval-1');
    expect([...systems]).toEqual([chat.actor.system]);
    expect(chat.actor.system.get('session')).toBe(chat.actor.getSnapshot().children.session);
  });
});
