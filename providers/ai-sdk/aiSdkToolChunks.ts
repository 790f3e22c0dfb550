import type { AgentEvent, AgentEventPayloadMap } from '../../protocol/eventSchemas';
import { redactSecrets } from '../../protocol/redactSecrets';
import { AISDKChunkError } from './AISDKChunkError';
import type { AISDKContext } from './aiSdkContext';
import { aiSdkMeta } from './aiSdkMeta';
import type { UIMessageChunk } from './uiMessageChunkSchema';

type ChunkOf<Type extends string> = Extract<UIMessageChunk, { type: Type }>;

/** The chunks about one tool call. */
export type AISDKToolChunk = ChunkOf<
  | 'tool-input-start'
  | 'tool-input-delta'
  | 'tool-input-available'
  | 'tool-input-error'
  | 'tool-approval-request'
  | 'tool-output-available'
  | 'tool-output-error'
  | 'tool-output-denied'
>;

/** The tool call's input as our `arguments` text: JSON, or the raw text a `tool-input-error` quotes. */
function argumentsOf(input: unknown, raw: boolean): string {
  if (raw && typeof input === 'string') return input;
  return JSON.stringify(input) ?? '';
}

/** Refuses an id or a name that is empty: later chunks and answers could not refer to it. */
function checkNamed(chunk: AISDKToolChunk, frame: string, fields: Record<string, string>): void {
  for (const field in fields) {
    if (fields[field] === '') throw new AISDKChunkError(chunk.type, field, 'is empty', frame);
  }
}

/** `tool.requested` for a call the stream names the first time, with what the wire says of it. */
function requestTool(
  chunk: ChunkOf<'tool-input-start' | 'tool-input-available' | 'tool-input-error'>,
  context: AISDKContext,
  frame: string,
): AgentEvent {
  checkNamed(chunk, frame, { toolCallId: chunk.toolCallId, toolName: chunk.toolName });
  if (context.toolCalls.has(chunk.toolCallId)) {
    throw new AISDKChunkError(chunk.type, 'toolCallId', 'names a tool call the stream already started', frame);
  }
  context.toolCalls.set(chunk.toolCallId, { name: chunk.toolName, inputComplete: false, settled: false });
  context.step.toolCallIds.push(chunk.toolCallId);
  return context.events.emit(
    'tool.requested',
    { toolCallId: chunk.toolCallId, name: chunk.toolName },
    aiSdkMeta(context, {
      providerExecuted: chunk.providerExecuted,
      dynamic: chunk.dynamic,
      title: chunk.title,
      toolMetadata: chunk.toolMetadata,
      providerMetadata: chunk.providerMetadata,
      inputEncoding: chunk.type === 'tool-input-start' ? chunk.inputEncoding : undefined,
    }),
  );
}

/** The input is complete: `tool.requested` first when the stream never started the call. */
function completeInput(
  chunk: ChunkOf<'tool-input-available' | 'tool-input-error'>,
  context: AISDKContext,
  frame: string,
): AgentEvent[] {
  const out: AgentEvent[] = [];
  const known = context.toolCalls.get(chunk.toolCallId);
  if (known === undefined) out.push(requestTool(chunk, context, frame));
  else if (known.inputComplete) {
    throw new AISDKChunkError(chunk.type, 'toolCallId', 'names a tool call whose input was already complete', frame);
  }
  const toolCall = context.toolCalls.get(chunk.toolCallId);
  if (toolCall !== undefined) toolCall.inputComplete = true;
  const payload = {
    toolCallId: chunk.toolCallId,
    arguments: argumentsOf(chunk.input, chunk.type === 'tool-input-error'),
  };
  const extra = known === undefined ? undefined : aiSdkMeta(context, { providerMetadata: chunk.providerMetadata });
  out.push(context.events.emit('tool.arguments_completed', payload, extra));
  return out;
}

/** Marks a call of this run settled, so the run does not wait on it. Calls of the run this one continues are settled by the event itself. */
function settle(context: AISDKContext, toolCallId: string): void {
  const toolCall = context.toolCalls.get(toolCallId);
  if (toolCall !== undefined) toolCall.settled = true;
}

/**
 * Maps the tool chunks: the call's input (`tool.requested`, `tool.arguments_delta`,
 * `tool.arguments_completed`, the input as JSON), an invalid input (`tool.failed`, code
 * `invalid_tool_input`), an approval request (`approval.requested`, not editable, its
 * descriptor in `data`), a preliminary output (`tool.running` and an `ai-sdk.preliminary-tool-output`
 * record), the output (`tool.completed`), an error (`tool.failed`, code `tool_error`) and a
 * denial (`tool.cancelled`, reason `denied`). An output may name a call of the run this one
 * continues (an approved tool the server ran): the event settles it there.
 */
export function mapToolChunk(chunk: AISDKToolChunk, context: AISDKContext, frame: string): AgentEvent[] {
  const { events } = context;
  switch (chunk.type) {
    case 'tool-input-start':
      return [requestTool(chunk, context, frame)];
    case 'tool-input-delta': {
      const toolCall = context.toolCalls.get(chunk.toolCallId);
      if (toolCall === undefined || toolCall.inputComplete) {
        const reason =
          toolCall === undefined ? 'names no tool call the stream started' : 'comes after the input was complete';
        throw new AISDKChunkError(chunk.type, 'toolCallId', reason, frame);
      }
      return [events.emit('tool.arguments_delta', { toolCallId: chunk.toolCallId, delta: chunk.inputTextDelta })];
    }
    case 'tool-input-available':
      return completeInput(chunk, context, frame);
    case 'tool-input-error': {
      const out = completeInput(chunk, context, frame);
      settle(context, chunk.toolCallId);
      const error = { message: redactSecrets(chunk.errorText), code: 'invalid_tool_input' };
      out.push(events.emit('tool.failed', { toolCallId: chunk.toolCallId, error }));
      return out;
    }
    case 'tool-approval-request': {
      checkNamed(chunk, frame, { approvalId: chunk.approvalId, toolCallId: chunk.toolCallId });
      context.openApprovals.add(chunk.approvalId);
      context.step.approvalIds.push(chunk.approvalId);
      // The protocol answers an approval yes or no, never with edited input: `modified` is
      // refused when the user asks for it, not after the continuation is sent.
      const payload: AgentEventPayloadMap['approval.requested'] = {
        approvalId: chunk.approvalId,
        toolCallId: chunk.toolCallId,
        editable: false,
      };
      const data: Record<string, unknown> = {};
      if (chunk.approvalDescriptor !== undefined) data.approvalDescriptor = chunk.approvalDescriptor;
      if (chunk.inputSchemaInput !== undefined) data.inputSchemaInput = chunk.inputSchemaInput;
      if (chunk.signature !== undefined) data.signature = chunk.signature;
      if (Object.keys(data).length > 0) payload.data = data;
      return [events.emit('approval.requested', payload, aiSdkMeta(context))];
    }
    case 'tool-output-available': {
      const meta = aiSdkMeta(context, {
        providerExecuted: chunk.providerExecuted,
        providerMetadata: chunk.providerMetadata,
        toolMetadata: chunk.toolMetadata,
        dynamic: chunk.dynamic,
      });
      if (chunk.preliminary === true) {
        const out: AgentEvent[] = [];
        const toolCall = context.toolCalls.get(chunk.toolCallId);
        if (toolCall !== undefined && !toolCall.running && toolCall.inputComplete) {
          toolCall.running = true;
          out.push(events.emit('tool.running', { toolCallId: chunk.toolCallId }));
        }
        const data = { toolCallId: chunk.toolCallId, output: chunk.output };
        out.push(events.emit('extension.emitted', { name: 'ai-sdk.preliminary-tool-output', data }, meta));
        return out;
      }
      settle(context, chunk.toolCallId);
      return [events.emit('tool.completed', { toolCallId: chunk.toolCallId, result: chunk.output }, meta)];
    }
    case 'tool-output-error': {
      settle(context, chunk.toolCallId);
      const error = { message: redactSecrets(chunk.errorText), code: 'tool_error' };
      const meta = aiSdkMeta(context, {
        providerExecuted: chunk.providerExecuted,
        providerMetadata: chunk.providerMetadata,
        toolMetadata: chunk.toolMetadata,
      });
      return [events.emit('tool.failed', { toolCallId: chunk.toolCallId, error }, meta)];
    }
    case 'tool-output-denied':
      settle(context, chunk.toolCallId);
      return [events.emit('tool.cancelled', { toolCallId: chunk.toolCallId, reason: 'denied' })];
  }
}
