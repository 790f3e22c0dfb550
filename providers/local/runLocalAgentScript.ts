import { AgentError } from '../../protocol/errors';
import { AgentTransportError } from '../../transports/AgentTransportError';
import type { LocalAgentChunk, LocalAgentScript, LocalAgentStep } from './localAgentChunks';

/** Thrown by the local runtime at a `fail` step, as a crashed model server would fail. */
export class LocalAgentRuntimeError extends AgentError {
  constructor(message: string, code = 'runtime_error') {
    super(code, message);
    this.name = 'LocalAgentRuntimeError';
  }

  /** Whether `value` is a LocalAgentRuntimeError (or of a subclass), from any copy of the package. */
  declare static isInstance: (value: unknown) => value is LocalAgentRuntimeError;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const abort = () => {
      clearTimeout(timer);
      reject(new AgentTransportError('aborted', 'The local run was aborted', { cause: signal.reason }));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
  });
}

/** What the run leaves to the application and the user, listed by its terminal event. */
interface LocalPending {
  toolCalls: string[];
  approvals: string[];
}

function* chunksOf(step: LocalAgentStep, index: number, pending: LocalPending): Generator<LocalAgentChunk> {
  const id = `${step.type}-${index}`;
  switch (step.type) {
    case 'reasoning':
      yield step.redacted === undefined
        ? { type: 'reasoning.start', id }
        : { type: 'reasoning.start', id, redacted: step.redacted };
      for (const delta of step.deltas) yield { type: 'reasoning.delta', id, delta };
      yield { type: 'reasoning.end', id };
      return;
    case 'text':
      yield { type: 'text.start', id };
      for (const delta of step.deltas) yield { type: 'text.delta', id, delta };
      yield { type: 'text.end', id };
      return;
    case 'tool':
      yield { type: 'tool.start', id, name: step.name };
      for (const delta of step.argumentDeltas) yield { type: 'tool.args', id, delta };
      yield { type: 'tool.args_end', id };
      if (step.error !== undefined) {
        yield { type: 'tool.running', id };
        yield { type: 'tool.error', id, error: step.error };
      } else if ('result' in step) {
        yield { type: 'tool.running', id };
        yield { type: 'tool.result', id, result: step.result };
      } else {
        pending.toolCalls.push(id);
      }
      return;
    case 'approval': {
      const request: LocalAgentChunk = { type: 'approval.request', id, description: step.description };
      if (step.risk !== undefined) request.risk = step.risk;
      if (step.toolCallId !== undefined) request.toolCallId = step.toolCallId;
      yield request;
      if (step.decision === undefined) pending.approvals.push(id);
      else yield { type: 'approval.resolved', id, decision: step.decision };
      return;
    }
    case 'task':
      yield { type: 'task.start', id, title: step.title };
      for (const progress of step.progress) yield { type: 'task.progress', id, progress };
      yield { type: 'task.end', id };
      return;
    case 'artifact': {
      const [first, ...later] = step.versions;
      const start: LocalAgentChunk = { type: 'artifact.start', id, mediaType: step.mediaType };
      if (step.title !== undefined) start.title = step.title;
      if (first !== undefined) start.content = first;
      yield start;
      // The start carries version 1; each later version counts up from 2.
      for (const [index, content] of later.entries())
        yield { type: 'artifact.version', id, version: index + 2, content };
      yield { type: 'artifact.end', id };
      return;
    }
    case 'error':
      yield { type: 'error', error: step.error };
      return;
    default:
      return;
  }
}

/**
 * Plays a script as a runtime would: chunk by chunk, with the script's delay, honouring
 * the abort signal. Tool steps without a result are left to the application, approval
 * steps without a decision to the user: the run ends listing them as pending.
 *
 * @example
 * for await (const chunk of runLocalAgentScript({ steps: [{ type: 'text', deltas: ['Hi'] }] }, signal)) console.log(chunk.type);
 * // text.start, text.delta, text.end, done
 */
export async function* runLocalAgentScript(
  script: LocalAgentScript,
  signal: AbortSignal,
): AsyncGenerator<LocalAgentChunk> {
  const delay = script.delayMs ?? 0;
  const pending: LocalPending = { toolCalls: [], approvals: [] };
  for (const [index, step] of script.steps.entries()) {
    if (signal.aborted) throw new AgentTransportError('aborted', 'The local run was aborted', { cause: signal.reason });
    if (step.type === 'fail') throw new LocalAgentRuntimeError(step.error.message, step.error.code);
    if (step.type === 'stall') {
      await new Promise<never>((_resolve, reject) => {
        const abort = () =>
          reject(new AgentTransportError('aborted', 'The local run was aborted', { cause: signal.reason }));
        if (signal.aborted) abort();
        else signal.addEventListener('abort', abort, { once: true });
      });
    }
    if (step.type === 'wait') await sleep(step.ms, signal);
    for (const chunk of chunksOf(step, index, pending)) {
      if (delay > 0) await sleep(delay, signal);
      else if (signal.aborted)
        throw new AgentTransportError('aborted', 'The local run was aborted', { cause: signal.reason });
      yield chunk;
      if (chunk.type === 'error') return;
    }
  }
  const done: LocalAgentChunk = { type: 'done' };
  if (script.usage !== undefined) done.usage = script.usage;
  if (pending.toolCalls.length > 0) done.pendingToolCallIds = pending.toolCalls;
  if (pending.approvals.length > 0) done.pendingApprovalIds = pending.approvals;
  yield done;
}
