import type { AgentEvent } from '../../protocol/eventSchemas';
import { createAsyncIterableTransport } from '../../transports/createAsyncIterableTransport';
import type { AgentProvider } from '../AgentProvider';
import type { AgentRunEmitter } from '../createAgentRunEmitter';
import { defineAgentProvider } from '../defineAgentProvider';
import { eventTypesOf } from '../eventTypeGroups';
import type { LocalAgentChunk, LocalAgentScript } from './localAgentChunks';
import { runLocalAgentScript } from './runLocalAgentScript';

export interface LocalAgentInput {
  prompt: string;
}

export interface LocalAgentContext {
  events: AgentRunEmitter;
}

export type LocalAgentRuntime = (request: LocalAgentInput, signal: AbortSignal) => AsyncIterable<LocalAgentChunk>;

export type LocalAgentProviderOptions =
  | { script: LocalAgentScript | ((input: LocalAgentInput) => LocalAgentScript); runtime?: never }
  | { runtime: LocalAgentRuntime; script?: never };

const LOCAL_EVENT_TYPES = eventTypesOf(['run', 'message', 'reasoning', 'toolCall', 'approval', 'task', 'artifact']);

function mapChunk(chunk: LocalAgentChunk, events: AgentRunEmitter): AgentEvent[] {
  switch (chunk.type) {
    case 'reasoning.start':
      return [
        events.emit(
          'reasoning.started',
          chunk.redacted ? { reasoningId: chunk.id, redacted: true } : { reasoningId: chunk.id },
        ),
      ];
    case 'reasoning.delta':
      return [events.emit('reasoning.delta', { reasoningId: chunk.id, delta: chunk.delta })];
    case 'reasoning.end':
      return [events.emit('reasoning.completed', { reasoningId: chunk.id })];
    case 'text.start':
      return [events.emit('message.started', { messageId: chunk.id, role: 'assistant' })];
    case 'text.delta':
      return [events.emit('message.delta', { messageId: chunk.id, delta: chunk.delta })];
    case 'text.end':
      return [events.emit('message.completed', { messageId: chunk.id })];
    case 'tool.start':
      return [events.emit('tool.requested', { toolCallId: chunk.id, name: chunk.name })];
    case 'tool.args':
      return [events.emit('tool.arguments_delta', { toolCallId: chunk.id, delta: chunk.delta })];
    case 'tool.args_end':
      return [events.emit('tool.arguments_completed', { toolCallId: chunk.id })];
    case 'tool.running':
      return [events.emit('tool.running', { toolCallId: chunk.id })];
    case 'tool.result':
      return [events.emit('tool.completed', { toolCallId: chunk.id, result: chunk.result })];
    case 'tool.error':
      return [events.emit('tool.failed', { toolCallId: chunk.id, error: chunk.error })];
    case 'approval.request': {
      const { id, description, risk, toolCallId } = chunk;
      const payload: { approvalId: string; description: string; risk?: string; toolCallId?: string } = {
        approvalId: id,
        description,
      };
      if (risk !== undefined) payload.risk = risk;
      if (toolCallId !== undefined) payload.toolCallId = toolCallId;
      return [events.emit('approval.requested', payload)];
    }
    case 'approval.resolved':
      return [events.emit('approval.resolved', { approvalId: chunk.id, decision: chunk.decision })];
    case 'task.start':
      return [events.emit('task.created', { taskId: chunk.id, title: chunk.title, progress: 0 })];
    case 'task.progress':
      return [events.emit('task.updated', { taskId: chunk.id, progress: chunk.progress })];
    case 'task.end':
      return [events.emit('task.completed', { taskId: chunk.id })];
    case 'artifact.start': {
      const payload: { artifactId: string; mediaType: string; title?: string; content?: string } = {
        artifactId: chunk.id,
        mediaType: chunk.mediaType,
      };
      if (chunk.title !== undefined) payload.title = chunk.title;
      if (chunk.content !== undefined) payload.content = chunk.content;
      return [events.emit('artifact.created', payload)];
    }
    case 'artifact.version':
      return [
        events.emit('artifact.updated', { artifactId: chunk.id, version: chunk.version, content: chunk.content }),
      ];
    case 'artifact.end':
      return [events.emit('artifact.completed', { artifactId: chunk.id })];
    case 'error':
      return events.close({ type: 'failed', error: chunk.error });
    case 'done': {
      const payload: { usage?: typeof chunk.usage; pendingToolCallIds?: string[]; pendingApprovalIds?: string[] } = {};
      if (chunk.usage !== undefined) payload.usage = chunk.usage;
      if (chunk.pendingToolCallIds !== undefined) payload.pendingToolCallIds = chunk.pendingToolCallIds;
      if (chunk.pendingApprovalIds !== undefined) payload.pendingApprovalIds = chunk.pendingApprovalIds;
      return [events.emit('run.completed', payload)];
    }
  }
}

/**
 * The embedded runtime: a provider over the async-iterable transport that plays a
 * scripted agent (reasoning, streamed text, tool calls with streamed arguments, failing
 * tools, approvals, tasks, artifacts, and failure or stall points), or runs your own
 * local runtime function. No network and no key: what `npm start` and the tests use.
 *
 * @example
 * const provider = createLocalAgentProvider({
 *   script: { steps: [{ type: 'text', deltas: ['Hello', ' there'] }], delayMs: 20 },
 * });
 * await runAgentProvider({ provider, input: { prompt: 'Hi' }, sessionId: 'local', onEvent: store.dispatch });
 */
export function createLocalAgentProvider(
  options: LocalAgentProviderOptions,
): AgentProvider<LocalAgentInput, LocalAgentInput, LocalAgentChunk, LocalAgentContext> {
  const runtime: LocalAgentRuntime =
    options.runtime ??
    ((request, signal) => {
      const script =
        typeof options.script === 'function' ? options.script(request) : (options.script as LocalAgentScript);
      return runLocalAgentScript(script, signal);
    });
  return defineAgentProvider({
    id: 'local',
    capabilities: { eventTypes: LOCAL_EVENT_TYPES },
    transport: createAsyncIterableTransport(runtime),
    createContext: (events) => ({ events }),
    start: (input, { events }) => [
      events.emit('run.started', { input }),
      events.emit('message.started', { messageId: 'prompt', role: 'user', content: input.prompt }),
      events.emit('message.completed', { messageId: 'prompt' }),
    ],
    prepareRequest: (input) => input,
    transformChunk: (chunk, { events }) => mapChunk(chunk, events),
    incompleteStream: { message: 'The local runtime ended without finishing the run', code: 'incomplete_stream' },
  });
}
