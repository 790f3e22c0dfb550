import fc from 'fast-check';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { runEvents } from './events';

type Factory = ReturnType<typeof runEvents>;

/**
 * Builds a valid interleaving of two runs from a list of choices: each choice picks a run
 * and an operation that is legal for what that run has open at that point.
 */
export function buildScenario(choices: readonly number[], endRuns: boolean): AgentEvent[] {
  // The second run has an id that a careless store would write into a prototype.
  const runs = ['r1', '__proto__'].map((runId) => ({
    runId,
    events: runEvents(runId) as Factory,
    messages: [] as string[],
    tools: [] as string[],
    awaiting: [] as string[],
    tasks: [] as string[],
    next: 0,
  }));
  const out: AgentEvent[] = runs.map((run) => run.events.create('run.started', { input: { runId: run.runId } }));
  for (const choice of choices) {
    const run = runs[choice % 2] as (typeof runs)[number];
    const { events } = run;
    const op = Math.floor(choice / 2) % 11;
    const id = () => `${run.runId}-x${run.next++}`;
    const pick = (list: string[]) => list[Math.floor(choice / 22) % list.length];
    if (op === 0) {
      const messageId = id();
      run.messages.push(messageId);
      out.push(events.create('message.started', { messageId, role: 'assistant' }));
    } else if (op === 1 && run.messages.length > 0) {
      out.push(events.create('message.delta', { messageId: pick(run.messages) as string, delta: `d${choice % 7}` }));
    } else if (op === 2 && run.messages.length > 0) {
      const messageId = pick(run.messages) as string;
      run.messages.splice(run.messages.indexOf(messageId), 1);
      out.push(events.create('message.completed', { messageId }));
    } else if (op === 3) {
      const toolCallId = id();
      run.tools.push(toolCallId);
      out.push(events.create('tool.requested', { toolCallId, name: 'search' }));
    } else if (op === 4 && run.tools.length > 0) {
      out.push(events.create('tool.arguments_delta', { toolCallId: pick(run.tools) as string, delta: '{"a":1}' }));
    } else if (op === 5 && run.tools.length > 0) {
      const toolCallId = pick(run.tools) as string;
      run.tools.splice(run.tools.indexOf(toolCallId), 1);
      run.awaiting.push(toolCallId);
      out.push(events.create('tool.arguments_completed', { toolCallId }));
    } else if (op === 6 && run.awaiting.length > 0) {
      const toolCallId = pick(run.awaiting) as string;
      run.awaiting.splice(run.awaiting.indexOf(toolCallId), 1);
      out.push(
        choice % 3 === 0
          ? events.create('tool.failed', { toolCallId, error: { message: 'x', retryable: true } })
          : events.create('tool.completed', { toolCallId, result: { ok: choice } }),
      );
    } else if (op === 7) {
      const taskId = id();
      run.tasks.push(taskId);
      out.push(events.create('task.created', { taskId, title: 't' }));
    } else if (op === 8 && run.tasks.length > 0) {
      out.push(events.create('task.updated', { taskId: pick(run.tasks) as string, progress: (choice % 10) / 10 }));
    } else if (op === 9) {
      out.push(events.create('state.snapshot', { snapshot: { count: choice, list: [run.runId] } }));
    } else if (op === 10) {
      out.push(events.create('state.delta', { patch: [{ op: 'add', path: `/k${choice % 5}`, value: choice }] }));
    }
  }
  if (endRuns) {
    for (const run of runs) out.push(run.events.create('run.completed', { pendingToolCallIds: run.awaiting }));
  }
  return out;
}

export type Corruption =
  | { kind: 'payload'; at: number }
  | { kind: 'envelope'; at: number }
  | { kind: 'swap'; at: number; with: number }
  | { kind: 'duplicate'; at: number; to: number }
  | { kind: 'retype'; at: number };

export const corruptionArbitrary: fc.Arbitrary<Corruption> = fc.oneof(
  fc.record({ kind: fc.constant('payload' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('envelope' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('swap' as const), at: fc.nat(), with: fc.nat() }),
  fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat(), to: fc.nat() }),
  fc.record({ kind: fc.constant('retype' as const), at: fc.nat() }),
);

/** Applies corruptions to a copy: broken payloads and envelopes, reorders, repeats, wrong types. */
export function corrupt(events: readonly AgentEvent[], corruptions: readonly Corruption[]): unknown[] {
  const out: unknown[] = [...events];
  if (out.length === 0) return out;
  for (const corruption of corruptions) {
    const at = corruption.at % out.length;
    const target = out[at] as Record<string, unknown>;
    switch (corruption.kind) {
      case 'payload':
        out[at] = { ...target, payload: { ...(target.payload as object), delta: 7, messageId: '' } };
        break;
      case 'envelope':
        out[at] = { ...target, sequence: -1, timestamp: 'late' };
        break;
      case 'swap': {
        const other = corruption.with % out.length;
        [out[at], out[other]] = [out[other], out[at]];
        break;
      }
      case 'duplicate':
        out.splice(corruption.to % out.length, 0, target);
        break;
      case 'retype':
        out[at] = { ...target, type: target.type === 'message.delta' ? 'tool.arguments_delta' : 'message.completed' };
        break;
    }
  }
  return out;
}
