import type { AgentEvent } from '../../protocol/eventSchemas';
import { redactSecrets } from '../../protocol/redactSecrets';
import { AISDKChunkError } from './AISDKChunkError';
import { type AISDKContext, takeId } from './aiSdkContext';
import { aiSdkMeta } from './aiSdkMeta';
import { endAISDKRun } from './aiSdkRunEnd';
import { finishStep, resetStep, startStep } from './aiSdkSteps';
import { type AISDKToolChunk, mapToolChunk } from './aiSdkToolChunks';
import type { UIMessageChunk } from './uiMessageChunkSchema';

type ChunkOf<Type extends string> = Extract<UIMessageChunk, { type: Type }>;

/** An extension record of the run, in the stream's order. */
function record(context: AISDKContext, name: `ai-sdk.${string}`, data: Record<string, unknown>): AgentEvent[] {
  return [context.events.emit('extension.emitted', { name, data }, aiSdkMeta(context))];
}

/** Message metadata, with the message's id: a record keeps no `meta`, and `toAISDKMessages` reads it back. */
function metadataRecord(context: AISDKContext, metadata: unknown): AgentEvent[] {
  if (metadata === undefined) return [];
  const { messageId } = context;
  return record(context, 'ai-sdk.message-metadata', messageId === undefined ? { metadata } : { messageId, metadata });
}

/** The open part a delta or an end names; the `ai` package refuses one it never started, and so does this. */
function openPart(parts: Map<string, string>, chunk: { type: string; id: string }, frame: string): string {
  const id = parts.get(chunk.id);
  if (id === undefined) throw new AISDKChunkError(chunk.type, 'id', `names no open part ("${chunk.id}")`, frame);
  return id;
}

/** A source, a file or a reasoning file: an artifact, created whole. */
function mapArtifact(
  chunk: ChunkOf<'source-url' | 'source-document' | 'file' | 'reasoning-file'>,
  context: AISDKContext,
): AgentEvent[] {
  const { events } = context;
  const isSource = chunk.type === 'source-url' || chunk.type === 'source-document';
  if (!isSource) context.fileCount += 1;
  const artifactId = takeId(context, 'artifact', isSource ? chunk.sourceId : `file-${context.fileCount}`);
  context.step.artifactIds.push(artifactId);
  const payload: { artifactId: string; mediaType?: string; title?: string; name?: string; uri?: string } = {
    artifactId,
  };
  if (chunk.type !== 'source-url' && chunk.mediaType !== '') payload.mediaType = chunk.mediaType;
  if (chunk.type === 'source-url' || chunk.type === 'source-document') {
    if (chunk.title !== undefined) payload.title = chunk.title;
  }
  if (chunk.type === 'source-document' && chunk.filename !== undefined) payload.name = chunk.filename;
  if (chunk.type !== 'source-document') payload.uri = chunk.url;
  const meta = aiSdkMeta(context, {
    type: chunk.type,
    sourceId: isSource ? chunk.sourceId : undefined,
    providerMetadata: chunk.providerMetadata,
  });
  return [events.emit('artifact.created', payload, meta), events.emit('artifact.completed', { artifactId })];
}

/**
 * A `data-*` part: an activity of type `data-{name}` whose content is the data, replaced
 * by a later part of the same type and `id`, as the `ai` package replaces it in the
 * message. A `transient` one is not kept as a part: it is an `ai-sdk.transient-data` record.
 */
function mapData(chunk: ChunkOf<`data-${string}`>, context: AISDKContext): AgentEvent[] {
  const { type, id, data } = chunk;
  if (chunk.transient === true) {
    return record(context, 'ai-sdk.transient-data', id === undefined ? { type, data } : { type, id, data });
  }
  let activityId: string;
  if (id === undefined) {
    context.dataCount += 1;
    activityId = `${type}#${context.dataCount}`;
  } else activityId = `${type}:${id}`;
  context.step.activityIds.push(activityId);
  return [context.events.emit('activity.snapshot', { activityId, activityType: type, content: data, replace: true })];
}

/**
 * Maps one chunk of an AI SDK UI message stream (or its closing `[DONE]`, `undefined`) to
 * the event protocol: text parts as assistant messages, reasoning parts as reasoning,
 * tool chunks as tool calls and approvals (`mapToolChunk`), sources and files as
 * artifacts, `data-*` parts as activities, steps as tasks, and what has no standard
 * meaning (message metadata, `custom`, transient data, a preliminary tool output,
 * `reset-step`) as `ai-sdk.*` extension records. `finish`, `abort` and `error` say how
 * the run ends; it ends so once the stream is over (`endAISDKRun`). Each event's
 * `meta.aiSdk` keeps the wire's own fields. Cost per chunk is that of the chunk.
 */
export function mapUIMessageChunk(
  chunk: UIMessageChunk | undefined,
  context: AISDKContext,
  frame: string,
): AgentEvent[] {
  const { events } = context;
  if (chunk === undefined) return endAISDKRun(context);
  switch (chunk.type) {
    case 'text-delta':
      return [
        events.emit('message.delta', { messageId: openPart(context.openTexts, chunk, frame), delta: chunk.delta }),
      ];
    case 'reasoning-delta': {
      const reasoningId = openPart(context.openReasoning, chunk, frame);
      return [events.emit('reasoning.delta', { reasoningId, delta: chunk.delta })];
    }
    case 'text-start': {
      const messageId = takeId(context, 'message', chunk.id);
      context.openTexts.set(chunk.id, messageId);
      context.step.messageIds.push(messageId);
      const meta = aiSdkMeta(context, { textId: chunk.id, providerMetadata: chunk.providerMetadata });
      return [events.emit('message.started', { messageId, role: 'assistant' }, meta)];
    }
    case 'text-end': {
      const messageId = openPart(context.openTexts, chunk, frame);
      context.openTexts.delete(chunk.id);
      const meta =
        chunk.providerMetadata === undefined
          ? undefined
          : aiSdkMeta(context, { providerMetadata: chunk.providerMetadata });
      return [events.emit('message.completed', { messageId }, meta)];
    }
    case 'reasoning-start': {
      const reasoningId = takeId(context, 'reasoning', chunk.id);
      context.openReasoning.set(chunk.id, reasoningId);
      context.step.reasoningIds.push(reasoningId);
      const meta = aiSdkMeta(context, { reasoningId: chunk.id, providerMetadata: chunk.providerMetadata });
      return [events.emit('reasoning.started', { reasoningId }, meta)];
    }
    case 'reasoning-end': {
      const reasoningId = openPart(context.openReasoning, chunk, frame);
      context.openReasoning.delete(chunk.id);
      const meta =
        chunk.providerMetadata === undefined
          ? undefined
          : aiSdkMeta(context, { providerMetadata: chunk.providerMetadata });
      return [events.emit('reasoning.completed', { reasoningId }, meta)];
    }
    case 'tool-input-start':
    case 'tool-input-delta':
    case 'tool-input-available':
    case 'tool-input-error':
    case 'tool-approval-request':
    case 'tool-output-available':
    case 'tool-output-error':
    case 'tool-output-denied':
      return mapToolChunk(chunk as AISDKToolChunk, context, frame);
    case 'source-url':
    case 'source-document':
    case 'file':
    case 'reasoning-file':
      return mapArtifact(chunk, context);
    case 'start-step':
      return startStep(context);
    case 'finish-step':
      return finishStep(context);
    case 'reset-step':
      return resetStep(context);
    case 'start':
      if (chunk.messageId !== undefined) context.messageId = chunk.messageId;
      return metadataRecord(context, chunk.messageMetadata);
    case 'message-metadata':
      return metadataRecord(context, chunk.messageMetadata);
    case 'finish':
      context.outcome =
        chunk.finishReason === undefined
          ? { type: 'finished' }
          : { type: 'finished', finishReason: chunk.finishReason };
      return metadataRecord(context, chunk.messageMetadata);
    case 'abort':
      context.outcome =
        chunk.reason === undefined ? { type: 'aborted' } : { type: 'aborted', reason: redactSecrets(chunk.reason) };
      return [];
    case 'error':
      // The first error is the run's; the `ai` package reports each one, and so do the records.
      context.failure ??= { message: redactSecrets(chunk.errorText), code: 'ai_sdk_error' };
      return record(context, 'ai-sdk.error', { errorText: redactSecrets(chunk.errorText) });
    case 'custom': {
      const data: Record<string, unknown> = { kind: chunk.kind };
      if (chunk.providerMetadata !== undefined) data.providerMetadata = chunk.providerMetadata;
      return record(context, 'ai-sdk.custom', data);
    }
    default:
      return mapData(chunk as ChunkOf<`data-${string}`>, context);
  }
}
