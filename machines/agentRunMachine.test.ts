import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import type { AgentCommand } from '../protocol/commandSchemas';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import { AgentProtocolError } from '../protocol/errors';
import type { AgentEvent } from '../protocol/eventSchemas';
import type { AgentProtocolIssue } from '../protocol/protocolIssue';
import { runEvents } from '../tests/support/events';
import { AGENT_ENTITY_CONTAINERS, type AgentEntityState, type AgentRunState, type AgentState } from './agentState';
import { createAgentStore } from './createAgentStore';
import {
  type AgentRunInput,
  agentRunMachine,
  type EntitySpawn,
  entityActorId,
  readAgentRunEntities,
} from './runMachine';

/** A run actor of run r1, alone, with the issues it emits. */
function runActor(input: Partial<AgentRunInput> = {}) {
  const issues: AgentProtocolIssue[] = [];
  const actor = createActor(agentRunMachine, { input: { sessionId: 's1', runId: 'r1', ...input } });
  actor.on('issue', ({ issue }) => issues.push(issue));
  actor.start();
  return { actor, issues };
}

function feedRun(events: readonly AgentEvent[], input: Partial<AgentRunInput> = {}) {
  const run = runActor(input);
  for (const event of events) run.actor.send(event);
  return run;
}

/** A store fed the same events, one at a time, as `runAgentProvider` feeds one. */
function feedStore(events: readonly AgentEvent[]): AgentState {
  const store = createAgentStore();
  for (const event of events) store.dispatch(event);
  return store.getSnapshot();
}

/** The store's records of run r1's entities, by the actor id the run actor uses. */
function storeEntities(state: AgentState): Record<string, AgentEntityState> {
  const entities: Record<string, AgentEntityState> = {};
  for (const { kind, key } of state.order) {
    const entity = (state[AGENT_ENTITY_CONTAINERS[kind]] as Record<string, AgentEntityState>)[key] as AgentEntityState;
    if (entity.runId === 'r1') entities[entityActorId(kind, entity.id)] = entity;
  }
  return entities;
}

type Run = ReturnType<typeof runActor>;

const childIds = ({ actor }: Run) => Object.keys(actor.getSnapshot().children);
const stateOf = ({ actor }: Run) => actor.getSnapshot().value;
const recordOf = ({ actor }: Run) => actor.getSnapshot().context.run;

/**
 * A run that ended keeps no live entity, and every child actor is stopped. (XState leaves the
 * children of a machine that reached a final state in its last snapshot's `children`, stopped.)
 */
function expectAllLetGo({ actor }: Run): void {
  expect(actor.getSnapshot().context.live).toEqual({});
  for (const child of Object.values(actor.getSnapshot().children)) {
    expect((child as { getSnapshot(): { status: string } }).getSnapshot().status).not.toBe('active');
  }
}

/** The run actor and the store, fed the same events, hold the same entities, issues and run record. */
function expectSameAsStore(run: Run, events: readonly AgentEvent[]): AgentState {
  const state = feedStore(events);
  expect(readAgentRunEntities(run.actor.getSnapshot())).toEqual(storeEntities(state));
  expect(run.issues).toEqual(state.issues);
  expect(recordOf(run)).toEqual(state.runs.r1);
  return state;
}

describe('agentRunMachine fed alone', () => {
  it('streams a message: spawns on start, forwards deltas, keeps the final record and stops the child', () => {
    const events = runEvents('r1');
    const run = runActor();
    expect(stateOf(run)).toBe('pending');
    const started = events.create('run.started', { title: 'Greeting' });
    run.actor.send(started);
    expect(stateOf(run)).toEqual({ running: 'idle' });
    expect(recordOf(run)).toEqual({
      id: 'r1',
      sessionId: 's1',
      status: 'running',
      title: 'Greeting',
      startedAt: started.timestamp,
      updatedAt: started.timestamp,
    });

    const stream = [
      started,
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('message.delta', { messageId: 'm1', delta: 'Hel' }),
      events.create('message.delta', { messageId: 'm1', delta: 'lo' }),
    ];
    for (const event of stream.slice(1)) run.actor.send(event);
    expect(childIds(run)).toEqual(['message:m1']);
    expect(run.actor.getSnapshot().context.live['message:m1']).toBe(run.actor.getSnapshot().children['message:m1']);
    expect(readAgentRunEntities(run.actor.getSnapshot())['message:m1']).toMatchObject({
      id: 'm1',
      key: 'r1:m1',
      status: 'streaming',
      content: 'Hello',
    });
    expectSameAsStore(run, stream);

    const completed = events.create('message.completed', { messageId: 'm1' });
    run.actor.send(completed);
    const { context } = run.actor.getSnapshot();
    expect(childIds(run)).toEqual([]);
    expect(context.live).toEqual({});
    expect(context.finished['message:m1']).toMatchObject({
      status: 'completed',
      content: 'Hello',
      updatedAt: completed.timestamp,
    });
    const state = expectSameAsStore(run, [...stream, completed]);
    expect(state.issues).toEqual([]);
  });

  it('streams tool arguments, then the result', () => {
    const events = runEvents('r1');
    const stream = [
      events.create('run.started', {}),
      events.create('tool.requested', { toolCallId: 't1', name: 'search' }),
      events.create('tool.arguments_delta', { toolCallId: 't1', delta: '{"q":' }),
      events.create('tool.arguments_delta', { toolCallId: 't1', delta: '"weather"}' }),
      events.create('tool.arguments_completed', { toolCallId: 't1' }),
    ];
    const run = feedRun(stream);
    expect(childIds(run)).toEqual(['toolCall:t1']);
    expect(readAgentRunEntities(run.actor.getSnapshot())['toolCall:t1']).toMatchObject({
      status: 'awaiting_execution',
      arguments: '{"q":"weather"}',
      parsedArguments: { q: 'weather' },
    });
    expectSameAsStore(run, stream);

    const running = events.create('tool.running', { toolCallId: 't1' });
    const done = events.create('tool.completed', { toolCallId: 't1', result: { celsius: 21 } });
    run.actor.send(running);
    run.actor.send(done);
    expect(childIds(run)).toEqual([]);
    expect(run.actor.getSnapshot().context.finished['toolCall:t1']).toMatchObject({
      status: 'completed',
      result: { celsius: 21 },
      parsedArguments: { q: 'weather' },
    });
    expectSameAsStore(run, [...stream, running, done]);
  });

  it('holds an approval, a task and an artifact as the store does, through to their ends', () => {
    const events = runEvents('r1');
    const all = [
      events.create('run.started', {}),
      events.create('approval.requested', { approvalId: 'a1', description: 'Send it?', version: 1 }),
      events.create('task.created', { taskId: 'k1', title: 'Plan' }),
      events.create('artifact.created', { artifactId: 'f1', mediaType: 'text/plain', content: 'v1' }),
      events.create('task.updated', { taskId: 'k1', progress: 0.5 }),
      events.create('artifact.updated', { artifactId: 'f1', version: 2, content: 'v2' }),
      events.create('approval.resolved', { approvalId: 'a1', decision: 'modified', data: { to: 'me' } }),
      events.create('task.completed', { taskId: 'k1', result: 'ok' }),
      events.create('artifact.completed', { artifactId: 'f1' }),
      events.create('run.completed', { output: 'sent' }),
    ];
    for (const cut of [4, 6, 7, all.length]) {
      const run = feedRun(all.slice(0, cut));
      expectSameAsStore(run, all.slice(0, cut));
    }
    const run = feedRun(all.slice(0, 6));
    expect(childIds(run).sort()).toEqual(['approval:a1', 'artifact:f1', 'task:k1']);
    expect(readAgentRunEntities(run.actor.getSnapshot())).toMatchObject({
      'approval:a1': { status: 'waiting', description: 'Send it?' },
      'task:k1': { status: 'running', progress: 0.5 },
      'artifact:f1': { status: 'open', version: 2, content: 'v2' },
    });
    for (const event of all.slice(6)) run.actor.send(event);
    expect(run.actor.getSnapshot().status).toBe('done');
    expect(run.issues).toEqual([]);
    expect(run.actor.getSnapshot().context.finished).toMatchObject({
      'approval:a1': { status: 'resolved', decision: 'modified', resolvedData: { to: 'me' } },
      'task:k1': { status: 'completed', result: 'ok' },
      'artifact:f1': { status: 'completed', version: 2 },
    });
    expect(run.actor.getSnapshot().output).toMatchObject({ status: 'completed', output: 'sent' });
  });
});

describe('agentRunMachine issues: the store codes, as the store records them', () => {
  const events = runEvents('r1');
  const started = events.create('run.started', {});
  const messageStarted = events.create('message.started', { messageId: 'm1', role: 'assistant' });
  const messageDone = events.create('message.completed', { messageId: 'm1', content: 'Hi' });
  const toolRequested = events.create('tool.requested', { toolCallId: 't1', name: 'search', arguments: '{}' });
  const toolArgumentsDone = events.create('tool.arguments_completed', { toolCallId: 't1' });

  const cases: Array<{
    name: string;
    before: AgentEvent[];
    refused: AgentEvent;
    issue: Pick<AgentProtocolIssue, 'code' | 'entityId' | 'state'>;
  }> = [
    {
      name: 'an event before run.started is missing_run',
      before: [],
      refused: messageStarted,
      issue: { code: 'missing_run', entityId: undefined, state: undefined },
    },
    {
      name: 'a second run.started is duplicate_entity',
      before: [started],
      refused: events.create('run.started', {}),
      issue: { code: 'duplicate_entity', entityId: undefined, state: undefined },
    },
    {
      name: 'a second start of a live entity is duplicate_entity',
      before: [started, messageStarted],
      refused: events.create('message.started', { messageId: 'm1', role: 'user' }),
      issue: { code: 'duplicate_entity', entityId: 'm1', state: undefined },
    },
    {
      name: 'a second start of a finished entity is duplicate_entity',
      before: [started, messageStarted, messageDone],
      refused: events.create('message.started', { messageId: 'm1', role: 'user' }),
      issue: { code: 'duplicate_entity', entityId: 'm1', state: undefined },
    },
    {
      name: 'an event for an entity never started is missing_entity',
      before: [started],
      refused: events.create('message.delta', { messageId: 'm9', delta: 'x' }),
      issue: { code: 'missing_entity', entityId: 'm9', state: undefined },
    },
    {
      name: 'an event a finished entity cannot take is invalid_transition, in its final state',
      before: [started, messageStarted, messageDone],
      refused: events.create('message.delta', { messageId: 'm1', delta: 'late' }),
      issue: { code: 'invalid_transition', entityId: 'm1', state: 'completed' },
    },
    {
      name: 'an event a live entity refuses is invalid_transition, in its state',
      before: [started, toolRequested, toolArgumentsDone],
      refused: events.create('tool.arguments_delta', { toolCallId: 't1', delta: '}' }),
      issue: { code: 'invalid_transition', entityId: 't1', state: 'awaiting_execution' },
    },
    {
      name: 'a stale artifact version is invalid_transition',
      before: [started, events.create('artifact.created', { artifactId: 'f1', version: 3 })],
      refused: events.create('artifact.updated', { artifactId: 'f1', version: 2, content: 'old' }),
      issue: { code: 'invalid_transition', entityId: 'f1', state: 'open' },
    },
    {
      name: 'an event for an entity a waiting run does not wait on is terminal_run',
      before: [
        started,
        toolRequested,
        toolArgumentsDone,
        events.create('run.completed', { pendingToolCallIds: ['t1'] }),
      ],
      refused: events.create('message.started', { messageId: 'm2', role: 'assistant' }),
      issue: { code: 'terminal_run', entityId: undefined, state: 'waiting_for_input' },
    },
  ];

  for (const { name, before, refused, issue } of cases) {
    it(name, () => {
      const run = feedRun(before);
      expect(run.issues).toEqual([]);
      const snapshot = run.actor.getSnapshot();
      const entities = readAgentRunEntities(snapshot);
      run.actor.send(refused);
      expect(run.issues).toEqual([{ ...issue, runId: 'r1', message: expect.any(String), event: refused }]);
      // Nothing changed: the same state, the same records.
      expect(run.actor.getSnapshot().value).toEqual(snapshot.value);
      expect(readAgentRunEntities(run.actor.getSnapshot())).toEqual(entities);
      expectSameAsStore(run, [...before, refused]);
    });
  }

  it('a terminal with active entities is active_entities_at_terminal, one per entity it closes', () => {
    const before = [started, messageStarted, events.create('task.created', { taskId: 'k1' })];
    const terminal = events.create('run.completed', {});
    const run = feedRun([...before, terminal]);
    expect(run.issues.map(({ code, entityId, state, runId }) => ({ code, entityId, state, runId }))).toEqual([
      { code: 'active_entities_at_terminal', entityId: 'm1', state: 'streaming', runId: 'r1' },
      { code: 'active_entities_at_terminal', entityId: 'k1', state: 'running', runId: 'r1' },
    ]);
    for (const issue of run.issues) expect(issue.event).toBe(terminal);
    expectSameAsStore(run, [...before, terminal]);
  });
});

describe('agentRunMachine at its terminal', () => {
  it('cancels active children as run_terminated, stops them and keeps their records', () => {
    const events = runEvents('r1');
    const all = [
      events.create('run.started', {}),
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('message.delta', { messageId: 'm1', delta: 'Hal' }),
      events.create('tool.requested', { toolCallId: 't1', name: 'search' }),
      events.create('tool.requested', { toolCallId: 't2', name: 'fetch', arguments: '{}' }),
      events.create('tool.failed', { toolCallId: 't2', error: { message: 'busy', retryable: true } }),
      events.create('run.cancelled', { reason: 'user' }),
    ];
    const run = feedRun(all);
    const snapshot = run.actor.getSnapshot();
    expect(snapshot.value).toBe('cancelled');
    expect(snapshot.status).toBe('done');
    expect(snapshot.output).toEqual(snapshot.context.run);
    expect(snapshot.output).toMatchObject({ status: 'cancelled', reason: 'user', endedAt: all[6]?.timestamp });
    expect(childIds(run)).toEqual([]);
    expect(snapshot.context.finished).toMatchObject({
      'message:m1': { status: 'cancelled', reason: 'run_terminated', content: 'Hal' },
      'toolCall:t1': { status: 'cancelled', reason: 'run_terminated' },
      // A retryable failure is not active: it stays as it was, and is no issue.
      'toolCall:t2': { status: 'failed', error: { message: 'busy', retryable: true } },
    });
    expect(run.issues.map((issue) => [issue.code, issue.entityId])).toEqual([
      ['active_entities_at_terminal', 'm1'],
      ['active_entities_at_terminal', 't1'],
    ]);
    expectSameAsStore(run, all);
  });

  for (const terminal of ['run.failed', 'run.cancelled'] as const) {
    it(`cancels an approval still waiting at ${terminal} without an issue (no event could close it)`, () => {
      const events = runEvents('r1');
      const all = [
        events.create('run.started', {}),
        events.create('approval.requested', { approvalId: 'a1' }),
        terminal === 'run.failed'
          ? events.create('run.failed', { error: { message: 'crash' } })
          : events.create('run.cancelled', {}),
      ];
      const run = feedRun(all);
      expect(run.issues).toEqual([]);
      expect(run.actor.getSnapshot().context.finished['approval:a1']).toMatchObject({
        status: 'cancelled',
        reason: 'run_terminated',
      });
      expectSameAsStore(run, all);
    });
  }

  it('reports an approval still waiting at run.completed that it does not list', () => {
    const events = runEvents('r1');
    const all = [
      events.create('run.started', {}),
      events.create('approval.requested', { approvalId: 'a1' }),
      events.create('run.completed', {}),
    ];
    const run = feedRun(all);
    expect(run.issues.map((issue) => [issue.code, issue.entityId, issue.state])).toEqual([
      ['active_entities_at_terminal', 'a1', 'waiting'],
    ]);
    expectSameAsStore(run, all);
  });

  function waitingOnTool() {
    const events = runEvents('r1');
    const before = [
      events.create('run.started', {}),
      events.create('message.started', { messageId: 'm1', role: 'assistant', content: 'Let me look.' }),
      events.create('message.completed', { messageId: 'm1' }),
      events.create('tool.requested', { toolCallId: 't1', name: 'lookup' }),
      events.create('tool.arguments_delta', { toolCallId: 't1', delta: '{"q":"x"}' }),
      events.create('run.completed', { output: 'asked', pendingToolCallIds: ['t1'] }),
    ];
    return { events, before, run: feedRun(before) };
  }

  it('keeps a listed tool call live and waits for input', () => {
    const { run, before } = waitingOnTool();
    const snapshot = run.actor.getSnapshot();
    expect(snapshot.value).toBe('waiting_for_input');
    expect(snapshot.status).toBe('active');
    expect(snapshot.hasTag('waiting')).toBe(true);
    expect(childIds(run)).toEqual(['toolCall:t1']);
    expect(snapshot.context.run).toMatchObject({ status: 'completed', output: 'asked', pendingToolCallIds: ['t1'] });
    // The listed call was still streaming its arguments: they are complete now.
    expect(readAgentRunEntities(snapshot)['toolCall:t1']).toMatchObject({
      status: 'awaiting_execution',
      parsedArguments: { q: 'x' },
    });
    expect(run.issues).toEqual([]);
    expectSameAsStore(run, before);
  });

  it("completes when the tool call's result arrives: the run is done and its output is its record", () => {
    const { run, before, events } = waitingOnTool();
    const result = events.create('tool.completed', { toolCallId: 't1', result: { found: true } });
    run.actor.send(result);
    const snapshot = run.actor.getSnapshot();
    expect(snapshot.value).toBe('completed');
    expect(snapshot.status).toBe('done');
    expect(snapshot.output).toEqual(snapshot.context.run);
    expect(snapshot.output).toMatchObject({ status: 'completed', pendingToolCallIds: ['t1'] });
    expectAllLetGo(run);
    expect(snapshot.context.finished['toolCall:t1']).toMatchObject({ status: 'completed', result: { found: true } });
    expect(run.issues).toEqual([]);
    const state = expectSameAsStore(run, [...before, result]);
    expect(snapshot.output).toEqual(state.runs.r1);
  });

  it('lets go of a listed tool call that fails retryable, and completes', () => {
    const { run, before, events } = waitingOnTool();
    const failure = events.create('tool.failed', { toolCallId: 't1', error: { message: 'busy', retryable: true } });
    run.actor.send(failure);
    const snapshot = run.actor.getSnapshot();
    expect(snapshot.value).toBe('completed');
    expect(snapshot.status).toBe('done');
    expectAllLetGo(run);
    expect(snapshot.context.finished['toolCall:t1']).toMatchObject({
      status: 'failed',
      error: { message: 'busy', retryable: true },
    });
    expectSameAsStore(run, [...before, failure]);
  });

  it('stays waiting while a listed tool call runs, and refuses what it does not wait on as terminal_run', () => {
    const { run, before, events } = waitingOnTool();
    const refused = [
      events.create('message.started', { messageId: 'm2', role: 'assistant' }),
      events.create('message.delta', { messageId: 'm1', delta: 'late' }),
      events.create('tool.requested', { toolCallId: 't2', name: 'other' }),
      events.create('task.updated', { taskId: 'k9', progress: 1 }),
    ];
    const running = events.create('tool.running', { toolCallId: 't1' });
    for (const event of [...refused, running]) run.actor.send(event);
    expect(stateOf(run)).toBe('waiting_for_input');
    expect(readAgentRunEntities(run.actor.getSnapshot())['toolCall:t1']?.status).toBe('running');
    expect(run.issues.map((issue) => [issue.code, issue.state, issue.event])).toEqual(
      refused.map((event) => ['terminal_run', 'waiting_for_input', event]),
    );
    // A tool call that waits may still refuse an event: that is its own refusal.
    const delta = events.create('tool.arguments_delta', { toolCallId: 't1', delta: 'x' });
    run.actor.send(delta);
    expect(run.issues.at(-1)).toMatchObject({ code: 'invalid_transition', entityId: 't1', state: 'running' });
    expectSameAsStore(run, [...before, ...refused, running, delta]);
  });

  it('refuses a second start or terminal while waiting, as the store does', () => {
    const { run, before, events } = waitingOnTool();
    const refused = [
      events.create('run.started', {}),
      events.create('run.completed', { output: 'again' }),
      events.create('run.failed', { error: { message: 'late' } }),
      events.create('run.cancelled', {}),
    ];
    for (const event of refused) run.actor.send(event);
    expect(stateOf(run)).toBe('waiting_for_input');
    expect(recordOf(run)).toMatchObject({ status: 'completed', output: 'asked' });
    expect(run.issues.map((issue) => [issue.code, issue.state, issue.event])).toEqual([
      ['duplicate_entity', undefined, refused[0]],
      ...refused.slice(1).map((event) => ['terminal_run', 'waiting_for_input', event]),
    ]);
    expectSameAsStore(run, [...before, ...refused]);
  });

  it('waits on a listed approval until it is resolved', () => {
    const events = runEvents('r1');
    const before = [
      events.create('run.started', {}),
      events.create('approval.requested', { approvalId: 'a1' }),
      events.create('task.created', { taskId: 'k1' }),
      events.create('run.completed', { pendingApprovalIds: ['a1'] }),
    ];
    const run = feedRun(before);
    expect(stateOf(run)).toBe('waiting_for_input');
    expect(childIds(run)).toEqual(['approval:a1']);
    expect(run.issues.map((issue) => [issue.code, issue.entityId])).toEqual([['active_entities_at_terminal', 'k1']]);
    const resolved = events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' });
    run.actor.send(resolved);
    expect(run.actor.getSnapshot().status).toBe('done');
    expect(run.actor.getSnapshot().output).toMatchObject({ status: 'completed', pendingApprovalIds: ['a1'] });
    expectSameAsStore(run, [...before, resolved]);
  });

  it('ends without waiting when a listed id cannot be left pending, and reports it', () => {
    const events = runEvents('r1');
    const all = [
      events.create('run.started', {}),
      events.create('tool.requested', { toolCallId: 't1', name: 'a', arguments: '{}' }),
      events.create('tool.completed', { toolCallId: 't1', result: 1 }),
      events.create('run.completed', { pendingToolCallIds: ['t1', 'tX'] }),
    ];
    const run = feedRun(all);
    expect(run.actor.getSnapshot().status).toBe('done');
    expect(run.issues.map((issue) => [issue.code, issue.entityId, issue.state])).toEqual([
      ['invalid_transition', 't1', 'completed'],
      ['missing_entity', 'tX', undefined],
    ]);
    expectSameAsStore(run, all);
  });
});

describe('agentRunMachine in strict mode', () => {
  it('refuses a terminal that would close entities: no transition, an issue, as the strict store throws it', () => {
    const events = runEvents('r1');
    const before = [
      events.create('run.started', {}),
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
    ];
    const terminal = events.create('run.completed', {});
    const run = feedRun(before, { protocolMode: 'strict' });
    run.actor.send(terminal);
    expect(stateOf(run)).toEqual({ running: 'idle' });
    expect(recordOf(run)?.status).toBe('running');
    expect(childIds(run)).toEqual(['message:m1']);
    expect(readAgentRunEntities(run.actor.getSnapshot())['message:m1']?.status).toBe('streaming');
    expect(run.issues).toEqual([
      {
        code: 'active_entities_at_terminal',
        entityId: 'm1',
        state: 'streaming',
        runId: 'r1',
        message: expect.any(String),
        event: terminal,
      },
    ]);

    const store = createAgentStore({ protocolMode: 'strict' });
    for (const event of before) store.dispatch(event);
    let thrown: unknown;
    try {
      store.dispatch(terminal);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AgentProtocolError);
    expect((thrown as AgentProtocolError).issue).toEqual(run.issues[0]);

    // Closed first, the run ends cleanly.
    const close = events.create('message.completed', { messageId: 'm1', content: 'ok' });
    const completed = events.create('run.completed', {});
    run.actor.send(close);
    run.actor.send(completed);
    expect(run.actor.getSnapshot().status).toBe('done');
    expect(run.issues).toHaveLength(1);
  });

  it('refuses a terminal listing an id that cannot be left pending', () => {
    const events = runEvents('r1');
    const terminal = events.create('run.completed', { pendingToolCallIds: ['tX'] });
    const run = feedRun([events.create('run.started', {}), terminal], { protocolMode: 'strict' });
    expect(stateOf(run)).toEqual({ running: 'idle' });
    expect(run.issues.map((issue) => [issue.code, issue.entityId])).toEqual([['missing_entity', 'tX']]);
  });
});

describe('agentRunMachine commands', () => {
  it('accepts run.cancel once while running, again after the command settles', () => {
    const events = runEvents('r1');
    const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1', now: () => 0 });
    const cancel = { type: 'run.cancel' as const, command: commands.create('run.cancel', {}), now: 0 };
    const run = runActor();
    // Before the start there is nothing to cancel: no transition, and no protocol issue either.
    expect(run.actor.getSnapshot().can(cancel)).toBe(false);
    run.actor.send(cancel);
    expect(stateOf(run)).toBe('pending');
    expect(run.issues).toEqual([]);
    run.actor.send(events.create('run.started', {}));
    expect(run.actor.getSnapshot().can(cancel)).toBe(true);
    run.actor.send(cancel);
    expect(stateOf(run)).toEqual({ running: 'cancelling' });
    expect(run.actor.getSnapshot().can(cancel)).toBe(false);
    run.actor.send({ type: 'store.command_settled' });
    expect(stateOf(run)).toEqual({ running: 'idle' });
    expect(run.actor.getSnapshot().can(cancel)).toBe(true);
    expect(run.issues).toEqual([]);

    // The store asks the same machine.
    const store = createAgentStore({ now: () => 0 });
    store.dispatch(runEvents('r1').create('run.started', {}));
    expect(store.can(cancel.command)).toBe(true);
    expect(store.submit(cancel.command)).toBe(true);
    expect(store.can(cancel.command)).toBe(false);
    store.settle(cancel.command);
    expect(store.can(cancel.command)).toBe(true);
  });

  it('takes no run.cancel while waiting for input', () => {
    const events = runEvents('r1');
    const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1', now: () => 0 });
    const cancel = { type: 'run.cancel' as const, command: commands.create('run.cancel', {}), now: 0 };
    const run = feedRun([
      events.create('run.started', {}),
      events.create('approval.requested', { approvalId: 'a1' }),
      events.create('run.completed', { pendingApprovalIds: ['a1'] }),
    ]);
    expect(stateOf(run)).toBe('waiting_for_input');
    expect(run.actor.getSnapshot().can(cancel)).toBe(false);
  });
});

describe('agentRunMachine entity commands: sent to the run, answered by the entity', () => {
  const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1', now: () => 0 });
  const asEvent = <Command extends AgentCommand>(command: Command) => ({ type: command.type, command, now: 0 });
  const childState = ({ actor }: Run, actorId: string) =>
    (actor.getSnapshot().children[actorId] as { getSnapshot(): { value: unknown } } | undefined)?.getSnapshot().value;

  /** A command the run must refuse: `can` says no, and sending it changes nothing and raises nothing. */
  function expectRefused(run: Run, command: AgentCommand): void {
    const event = asEvent(command);
    const before = run.actor.getSnapshot();
    const children = Object.fromEntries(
      Object.keys(before.children).map((actorId) => [actorId, childState(run, actorId)]),
    );
    const issues = run.issues.length;
    expect(before.can(event), `${command.type} is refused`).toBe(false);
    run.actor.send(event);
    expect(run.actor.getSnapshot().value).toEqual(before.value);
    expect(readAgentRunEntities(run.actor.getSnapshot())).toEqual(readAgentRunEntities(before));
    for (const [actorId, value] of Object.entries(children)) expect(childState(run, actorId), actorId).toEqual(value);
    expect(run.issues).toHaveLength(issues);
  }

  /** A store fed the same events answers the command the same way. */
  function storeAnswers(events: readonly AgentEvent[], command: AgentCommand): boolean {
    const store = createAgentStore({ now: () => 0 });
    for (const event of events) store.dispatch(event);
    const can = store.can(command);
    expect(store.submit(command)).toBe(can);
    return can;
  }

  it('resolves an approval: the approval submits, refuses a second decision, and the runtime answer resolves it', () => {
    const events = runEvents('r1');
    const before = [
      events.create('run.started', {}),
      events.create('approval.requested', { approvalId: 'a1', version: 2 }),
    ];
    const run = feedRun(before);
    const approve = commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved', expectedVersion: 2 });
    const records = readAgentRunEntities(run.actor.getSnapshot());
    expect(run.actor.getSnapshot().can(asEvent(approve))).toBe(true);
    expect(storeAnswers(before, approve)).toBe(true);

    run.actor.send(asEvent(approve));
    expect(childState(run, 'approval:a1')).toEqual({ waiting: 'submitting' });
    // A command never changes a record: only the runtime's answer does.
    expect(readAgentRunEntities(run.actor.getSnapshot())).toEqual(records);
    expectRefused(run, commands.create('approval.resolve', { approvalId: 'a1', decision: 'rejected' }));

    // Settled (the runtime answered, or sending failed): the approval takes a decision again.
    run.actor.send({ type: 'store.command_settled', command: approve });
    expect(childState(run, 'approval:a1')).toEqual({ waiting: 'idle' });
    expect(stateOf(run)).toEqual({ running: 'idle' });
    run.actor.send(asEvent(approve));
    const resolved = events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' });
    run.actor.send(resolved);
    expect(readAgentRunEntities(run.actor.getSnapshot())['approval:a1']).toMatchObject({
      status: 'resolved',
      decision: 'approved',
    });
    expect(run.actor.getSnapshot().context.live).toEqual({});
    expectRefused(run, approve);
    expect(run.issues).toEqual([]);
    expectSameAsStore(run, [...before, resolved]);
  });

  it('retries a retryable failed tool call: once, until its retry arrives', () => {
    const events = runEvents('r1');
    const before = [
      events.create('run.started', {}),
      events.create('tool.requested', { toolCallId: 't1', name: 'lookup', arguments: '{}' }),
      events.create('tool.failed', { toolCallId: 't1', error: { message: 'busy', retryable: true } }),
    ];
    const run = feedRun(before);
    const retry = commands.create('tool.retry', { toolCallId: 't1' });
    expect(childState(run, 'toolCall:t1')).toEqual({ retryable: 'idle' });
    expect(storeAnswers(before, retry)).toBe(true);

    run.actor.send(asEvent(retry));
    expect(childState(run, 'toolCall:t1')).toEqual({ retryable: 'submitting' });
    expectRefused(run, commands.create('tool.retry', { toolCallId: 't1' }));
    run.actor.send({ type: 'store.command_settled', command: retry });
    expect(childState(run, 'toolCall:t1')).toEqual({ retryable: 'idle' });

    // The retry arrives as a new call: the failed one records it and takes no other retry.
    const retried = events.create('tool.requested', {
      toolCallId: 't2',
      name: 'lookup',
      arguments: '{}',
      retryOf: 't1',
      attempt: 2,
    });
    run.actor.send(retried);
    expect(readAgentRunEntities(run.actor.getSnapshot())['toolCall:t1']).toMatchObject({
      status: 'failed',
      retriedBy: 't2',
    });
    expectRefused(run, retry);
    expect(storeAnswers([...before, retried], retry)).toBe(false);
    expect(run.issues).toEqual([]);
    expectSameAsStore(run, [...before, retried]);
  });

  it('takes a tool result while waiting for input; the runtime answer completes the run', () => {
    const events = runEvents('r1');
    const before = [
      events.create('run.started', {}),
      events.create('tool.requested', { toolCallId: 't1', name: 'pick_file', arguments: '{}' }),
      events.create('run.completed', { pendingToolCallIds: ['t1'] }),
    ];
    const run = feedRun(before);
    expect(stateOf(run)).toBe('waiting_for_input');
    const result = commands.create('tool.submit_result', { toolCallId: 't1', result: { path: 'a.txt' } });
    expect(storeAnswers(before, result)).toBe(true);

    run.actor.send(asEvent(result));
    expect(stateOf(run)).toBe('waiting_for_input');
    expect(childState(run, 'toolCall:t1')).toEqual({ open: { awaiting_execution: 'submitting' } });
    expect(readAgentRunEntities(run.actor.getSnapshot())['toolCall:t1']?.status).toBe('awaiting_execution');
    expectRefused(run, commands.create('tool.submit_result', { toolCallId: 't1', result: 2 }));

    const completed = events.create('tool.completed', { toolCallId: 't1', result: { path: 'a.txt' } });
    run.actor.send(completed);
    expect(run.actor.getSnapshot().status).toBe('done');
    expect(readAgentRunEntities(run.actor.getSnapshot())['toolCall:t1']).toMatchObject({
      status: 'completed',
      result: { path: 'a.txt' },
    });
    expectRefused(run, result);
    expect(run.issues).toEqual([]);
    expectSameAsStore(run, [...before, completed]);
  });

  it('refuses a command for an entity it does not hold, of another run or session, or before the start', () => {
    const events = runEvents('r1');
    const run = runActor();
    // Before the start: nothing to command, and no protocol issue either.
    expectRefused(run, commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' }));
    expect(stateOf(run)).toBe('pending');
    const before = [
      events.create('run.started', {}),
      events.create('approval.requested', { approvalId: 'a1' }),
      events.create('tool.requested', { toolCallId: 't1', name: 'x', arguments: '{}' }),
      events.create('tool.failed', { toolCallId: 't1', error: { message: 'busy', retryable: true } }),
    ];
    for (const event of before) run.actor.send(event);
    const otherRun = createAgentCommandFactory({ sessionId: 's1', runId: 'r2', now: () => 0 });
    const otherSession = createAgentCommandFactory({ sessionId: 's2', runId: 'r1', now: () => 0 });
    const refused = [
      commands.create('approval.resolve', { approvalId: 'a9', decision: 'approved' }),
      commands.create('tool.retry', { toolCallId: 't9' }),
      commands.create('tool.submit_result', { toolCallId: 't9', result: 1 }),
      // The approval's id as a tool call's, and the other way round.
      commands.create('tool.retry', { toolCallId: 'a1' }),
      commands.create('approval.resolve', { approvalId: 't1', decision: 'approved' }),
      otherRun.create('approval.resolve', { approvalId: 'a1', decision: 'approved' }),
      otherSession.create('tool.retry', { toolCallId: 't1' }),
      otherSession.create('run.cancel', {}),
    ];
    for (const command of refused) {
      expectRefused(run, command);
      expect(storeAnswers(before, command), `${command.type} ${JSON.stringify(command.payload)}`).toBe(false);
    }
    expect(stateOf(run)).toEqual({ running: 'idle' });
    expect(childState(run, 'approval:a1')).toEqual({ waiting: 'idle' });
    expect(childState(run, 'toolCall:t1')).toEqual({ retryable: 'idle' });
  });

  it("refuses a command its entity's state refuses, as the store does", () => {
    const events = runEvents('r1');
    const before = [
      events.create('run.started', {}),
      events.create('approval.requested', { approvalId: 'a1', version: 1, editable: false }),
      events.create('tool.requested', { toolCallId: 'streaming', name: 'x' }),
      events.create('tool.requested', { toolCallId: 'failed', name: 'x', arguments: '{}' }),
      events.create('tool.failed', { toolCallId: 'failed', error: { message: 'bad input' } }),
      events.create('tool.requested', { toolCallId: 'retryable', name: 'x', arguments: '{}' }),
      events.create('tool.failed', { toolCallId: 'retryable', error: { message: 'busy', retryable: true } }),
      events.create('tool.requested', { toolCallId: 'awaiting', name: 'x', arguments: '{}' }),
      events.create('tool.arguments_completed', { toolCallId: 'awaiting' }),
    ];
    const run = feedRun(before);
    const refused = [
      commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved', expectedVersion: 2 }),
      commands.create('approval.resolve', { approvalId: 'a1', decision: 'modified', data: {} }),
      commands.create('tool.submit_result', { toolCallId: 'streaming', result: 1 }),
      commands.create('tool.retry', { toolCallId: 'streaming' }),
      commands.create('tool.retry', { toolCallId: 'failed' }),
      commands.create('tool.submit_result', { toolCallId: 'failed', result: 1 }),
      commands.create('tool.submit_result', { toolCallId: 'retryable', result: 1 }),
      commands.create('tool.retry', { toolCallId: 'awaiting' }),
    ];
    for (const command of refused) {
      expectRefused(run, command);
      expect(storeAnswers(before, command), `${command.type} ${JSON.stringify(command.payload)}`).toBe(false);
    }
    // What those states do take.
    const accepted = [
      commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved', expectedVersion: 1 }),
      commands.create('tool.retry', { toolCallId: 'retryable' }),
      commands.create('tool.submit_result', { toolCallId: 'awaiting', result: 1 }),
    ];
    for (const command of accepted) {
      expect(run.actor.getSnapshot().can(asEvent(command)), command.type).toBe(true);
      expect(storeAnswers(before, command), command.type).toBe(true);
    }
    expect(run.issues).toEqual([]);
  });

  it('takes no entity command once it has ended; a waiting run takes them only for what it waits on', () => {
    const events = runEvents('r1');
    const run = feedRun([
      events.create('run.started', {}),
      events.create('approval.requested', { approvalId: 'a1' }),
      events.create('approval.requested', { approvalId: 'a2' }),
      events.create('run.completed', { pendingApprovalIds: ['a1'] }),
    ]);
    expect(stateOf(run)).toBe('waiting_for_input');
    expect(readAgentRunEntities(run.actor.getSnapshot())['approval:a2']?.status).toBe('cancelled');
    expectRefused(run, commands.create('approval.resolve', { approvalId: 'a2', decision: 'approved' }));
    const approve = commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' });
    run.actor.send(asEvent(approve));
    expect(childState(run, 'approval:a1')).toEqual({ waiting: 'submitting' });
    run.actor.send(events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }));
    expect(run.actor.getSnapshot().status).toBe('done');
    expect(run.actor.getSnapshot().can(asEvent(approve))).toBe(false);
    // The unlisted approval was closed at the terminal; the commands raised nothing.
    expect(run.issues.map((issue) => [issue.code, issue.entityId])).toEqual([['active_entities_at_terminal', 'a2']]);
  });

  it("hands an entity command's settlement to the entity while the run's own cancel is in flight", () => {
    const events = runEvents('r1');
    const run = feedRun([events.create('run.started', {}), events.create('approval.requested', { approvalId: 'a1' })]);
    const cancel = commands.create('run.cancel', {});
    const approve = commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' });
    run.actor.send(asEvent(cancel));
    run.actor.send(asEvent(approve));
    expect(stateOf(run)).toEqual({ running: 'cancelling' });
    expect(childState(run, 'approval:a1')).toEqual({ waiting: 'submitting' });
    run.actor.send({ type: 'store.command_settled', command: approve });
    expect(stateOf(run)).toEqual({ running: 'cancelling' });
    expect(childState(run, 'approval:a1')).toEqual({ waiting: 'idle' });
    run.actor.send({ type: 'store.command_settled', command: cancel });
    expect(stateOf(run)).toEqual({ running: 'idle' });
    expect(run.issues).toEqual([]);
  });
});

describe('agentRunMachine restored from a record', () => {
  const events = runEvents('r1');
  const head = [
    events.create('run.started', {}),
    events.create('message.started', { messageId: 'm1', role: 'assistant' }),
    events.create('message.delta', { messageId: 'm1', delta: 'Checking' }),
    events.create('message.completed', { messageId: 'm1' }),
    events.create('tool.requested', { toolCallId: 't1', name: 'lookup' }),
    events.create('tool.arguments_delta', { toolCallId: 't1', delta: '{"q":1}' }),
    events.create('approval.requested', { approvalId: 'a1' }),
  ];
  const tail = [
    events.create('message.started', { messageId: 'm1', role: 'assistant' }),
    events.create('approval.resolved', { approvalId: 'a1', decision: 'approved' }),
    events.create('run.completed', { pendingToolCallIds: ['t1'] }),
    events.create('task.created', { taskId: 'k1' }),
    events.create('tool.completed', { toolCallId: 't1', result: 2 }),
  ];

  /** The input a checkpoint gives: the run's record, its open entities, the final records of the rest. */
  function inputFrom(run: Run): Partial<AgentRunInput> {
    const snapshot = run.actor.getSnapshot();
    const entities: EntitySpawn[] = Object.entries(snapshot.context.live).map(([actorId, child]) => ({
      kind: actorId.slice(0, actorId.indexOf(':')) as EntitySpawn['kind'],
      actorId,
      entity: child.getSnapshot().context.entity,
    }));
    // Through JSON, as a checkpoint keeps it.
    return JSON.parse(JSON.stringify({ run: snapshot.context.run, entities, finished: snapshot.context.finished }));
  }

  it('continues a running run like a full replay', () => {
    const replay = feedRun([...head, ...tail]);
    const restored = runActor(inputFrom(feedRun(head)));
    expect(stateOf(restored)).toEqual({ running: 'idle' });
    expect(childIds(restored).sort()).toEqual(['approval:a1', 'toolCall:t1']);
    for (const event of tail) restored.actor.send(event);
    expect(restored.actor.getSnapshot().status).toBe('done');
    expect(readAgentRunEntities(restored.actor.getSnapshot())).toEqual(
      readAgentRunEntities(replay.actor.getSnapshot()),
    );
    expect(restored.actor.getSnapshot().output).toEqual(replay.actor.getSnapshot().output);
    // The second start of m1 and the task after the terminal are refused the same way.
    expect(restored.issues).toEqual(replay.issues);
    expect(restored.issues.map((issue) => issue.code)).toEqual(['duplicate_entity', 'terminal_run']);
  });

  it('continues a run waiting for input like a full replay', () => {
    const cut = head.length + 3;
    const all = [...head, ...tail];
    const replay = feedRun(all);
    const waiting = feedRun(all.slice(0, cut));
    expect(stateOf(waiting)).toBe('waiting_for_input');
    const restored = runActor(inputFrom(waiting));
    expect(stateOf(restored)).toBe('waiting_for_input');
    expect(childIds(restored)).toEqual(['toolCall:t1']);
    for (const event of all.slice(cut)) restored.actor.send(event);
    expect(restored.actor.getSnapshot().value).toBe('completed');
    expect(readAgentRunEntities(restored.actor.getSnapshot())).toEqual(
      readAgentRunEntities(replay.actor.getSnapshot()),
    );
    expect(restored.issues).toEqual(replay.issues.slice(-1));
  });

  it('restores an ended run in its final state', () => {
    const ended = feedRun([
      events.create('run.started', {}),
      events.create('run.failed', { error: { message: 'crash' } }),
    ]);
    const restored = runActor({ run: recordOf(ended) as AgentRunState });
    expect(stateOf(restored)).toBe('failed');
    expect(restored.actor.getSnapshot().output).toEqual(recordOf(ended));
  });
});
