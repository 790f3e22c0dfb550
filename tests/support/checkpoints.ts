import { AGENT_CHECKPOINT_SCHEMA_VERSION, type AgentCheckpoint } from '../../checkpoint/AgentCheckpoint';
import { AgentCheckpointError } from '../../checkpoint/AgentCheckpointError';
import { createAgentStore } from '../../machines/createAgentStore';
import type { AgentCommand } from '../../protocol/commandSchemas';
import { AGENT_COMMAND_PROTOCOL_VERSION, AGENT_EVENT_PROTOCOL_VERSION } from '../../protocol/constants';
import { createAgentCommandFactory } from '../../protocol/createAgentCommandFactory';
import { runEvents } from './events';

/** A pending `approval.resolve` of run `r1` (of session `s1` by default), with fixed ids. */
export function sampleCommand(overrides: Partial<AgentCommand> = {}): AgentCommand {
  const commands = createAgentCommandFactory({
    sessionId: overrides.sessionId ?? 's1',
    runId: 'r1',
    now: () => 5_000,
    createCommandId: () => 'c1',
  });
  return {
    ...commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' }),
    ...overrides,
  } as AgentCommand;
}

/**
 * A checkpoint of a session (`s1` by default) as a store makes it: run `r1` still streaming
 * (a message, a tool call, an approval waiting), run `r2` completed; an input, a cursor and a
 * pending command of `r1`.
 */
export function sampleCheckpoint(sessionId = 's1'): AgentCheckpoint {
  const store = createAgentStore();
  const r1 = runEvents('r1', sessionId);
  const r2 = runEvents('r2', sessionId);
  store.batch([
    r1.create('run.started', { input: { prompt: 'hello' } }),
    r1.create('message.started', { messageId: 'm1', role: 'assistant' }),
    r1.create('message.delta', { messageId: 'm1', delta: 'Hel' }),
    r1.create('tool.requested', { toolCallId: 't1', name: 'search' }),
    r1.create('tool.arguments_delta', { toolCallId: 't1', delta: '{"q":"x"}' }),
    r1.create('tool.arguments_completed', { toolCallId: 't1' }),
    r1.create('approval.requested', { approvalId: 'a1', toolCallId: 't1' }),
    r2.create('run.started', {}),
    r2.create('message.started', { messageId: 'm1', role: 'assistant' }),
    r2.create('message.delta', { messageId: 'm1', delta: 'done' }),
    r2.create('message.completed', { messageId: 'm1' }),
    r2.create('run.completed', {}),
  ]);
  const state = store.getSnapshot();
  store.destroy();
  if (state.issues.length > 0) throw new Error(`sample events were refused: ${JSON.stringify(state.issues)}`);
  return {
    schemaVersion: AGENT_CHECKPOINT_SCHEMA_VERSION,
    eventProtocolVersion: AGENT_EVENT_PROTOCOL_VERSION,
    commandProtocolVersion: AGENT_COMMAND_PROTOCOL_VERSION,
    sessionId,
    state,
    inputByRun: { r1: { prompt: 'hello', options: { temperature: 0.2, tags: ['a', 'b'] } } },
    cursorByRun: { r1: 'cursor-7' },
    pendingCommands: [sampleCommand({ sessionId })],
    savedAt: 9_000,
  };
}

/** The checkpoint as stored JSON reads back: a fresh, mutable plain value to corrupt. */
export function sampleStored(): Record<string, unknown> {
  return JSON.parse(JSON.stringify(sampleCheckpoint())) as Record<string, unknown>;
}

/** An in-memory `localStorage`; `failWith` makes its next calls throw. */
export class FakeWebStorage {
  readonly items = new Map<string, string>();
  failWith: unknown;

  getItem(key: string): string | null {
    if (this.failWith !== undefined) throw this.failWith;
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    if (this.failWith !== undefined) throw this.failWith;
    this.items.set(key, String(value));
  }
  removeItem(key: string): void {
    if (this.failWith !== undefined) throw this.failWith;
    this.items.delete(key);
  }
}

/** The `AgentCheckpointError` a promise rejects with; anything else (or resolving) fails the test. */
export async function checkpointRejection(promise: Promise<unknown>): Promise<AgentCheckpointError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!AgentCheckpointError.isInstance(error)) throw new Error(`expected an AgentCheckpointError, got ${error}`);
  return error;
}
