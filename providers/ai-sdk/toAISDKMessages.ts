import type {
  AgentApprovalState,
  AgentArtifactState,
  AgentEntityBase,
  AgentMessageState,
  AgentState,
  AgentToolCallState,
} from '../../machines/agentState';
import { getOwn } from '../../machines/agentStateProjection';
import type { AgentContentPart } from '../../protocol/contentSchemas';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import type { AgentApprovalAnswer } from '../AgentProvider';
import { approvalResponseOf } from './aiSdkContinuation';
import type { AISDKUIMessage, AISDKUIMessagePart } from './aiSdkMessages';

/** The `meta.aiSdk` the provider wrote on an entity, when it did. */
function wireOf(entity: { meta?: Record<string, unknown> }): Record<string, unknown> | undefined {
  const aiSdk = entity.meta?.aiSdk;
  return typeof aiSdk === 'object' && aiSdk !== null ? (aiSdk as Record<string, unknown>) : undefined;
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The fields that are not `undefined` (JSON would drop them anyway). */
function defined(fields: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const field in fields) if (fields[field] !== undefined) kept[field] = fields[field];
  return kept;
}

function part(type: string, fields: Record<string, unknown>): AISDKUIMessagePart {
  return { type, ...defined(fields) };
}

/** A user or system message's content as UIMessage parts: text, and images and files that have a URL. */
function contentParts(content: AgentMessageState['content']): AISDKUIMessagePart[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  const parts: AISDKUIMessagePart[] = [];
  for (const item of content as AgentContentPart[]) {
    if (item.type === 'text') parts.push({ type: 'text', text: item.text });
    else if ((item.type === 'image' || item.type === 'file') && typeof item.url === 'string') {
      const fallback = item.type === 'image' ? 'image/*' : 'application/octet-stream';
      const filename = item.type === 'file' ? item.name : undefined;
      parts.push(part('file', { mediaType: item.mediaType ?? fallback, url: item.url, filename }));
    }
  }
  return parts;
}

/** The entity ids a `reset-step` record says the step dropped, as `kind:key`. */
function droppedKeys(state: AgentState, runIds: readonly string[]): Set<string> {
  const dropped = new Set<string>();
  const kinds = [
    ['message', 'messageIds'],
    ['reasoning', 'reasoningIds'],
    ['toolCall', 'toolCallIds'],
    ['artifact', 'artifactIds'],
    ['activity', 'activityIds'],
  ] as const;
  for (const runId of runIds) {
    for (const record of getOwn(state.extensions, runId) ?? []) {
      if (record.name !== 'ai-sdk.reset-step' || typeof record.data !== 'object' || record.data === null) continue;
      const data = record.data as Record<string, unknown>;
      for (const [kind, field] of kinds) {
        const ids = data[field];
        if (!Array.isArray(ids)) continue;
        for (const id of ids) if (typeof id === 'string') dropped.add(`${kind}:${getAgentEntityKey(runId, id)}`);
      }
    }
  }
  return dropped;
}

/** The `approval` of a tool part: its id, the answer when there is one, and what the request carried. */
function approvalOf(approval: AgentApprovalState, response: { approved: boolean; reason?: string } | undefined) {
  const data =
    typeof approval.data === 'object' && approval.data !== null ? (approval.data as Record<string, unknown>) : {};
  return defined({
    id: approval.id,
    approved: response?.approved,
    reason: response?.reason,
    descriptor: data.approvalDescriptor,
    inputSchemaInput: data.inputSchemaInput,
    signature: stringOf(data.signature),
  });
}

/** The answer an approval got: the continuation's, else the one AgentState recorded. */
function responseOf(
  approval: AgentApprovalState | undefined,
  answers: ReadonlyMap<string, AgentApprovalAnswer>,
): { approved: boolean; reason?: string } | undefined {
  if (approval === undefined) return undefined;
  const answer = answers.get(approval.id);
  if (answer !== undefined) return approvalResponseOf(answer);
  if (approval.status === 'waiting') return undefined;
  const reason = stringOf(approval.resolvedData) ?? stringOf((approval.resolvedData as { reason?: unknown })?.reason);
  return { approved: approval.decision === 'approved', ...(reason === undefined ? {} : { reason }) };
}

/**
 * A tool call as the AI SDK's tool part, in the state the AI SDK gives it: `output-available`,
 * `output-error`, `output-denied` (cancelled after a rejection), `approval-responded`
 * (answered, not run yet), `approval-requested`, `input-available`. Calls still streaming
 * their input, and calls cancelled otherwise, are left out: no answer could follow them.
 */
function toolPart(
  toolCall: AgentToolCallState,
  approval: AgentApprovalState | undefined,
  answers: ReadonlyMap<string, AgentApprovalAnswer>,
): AISDKUIMessagePart | undefined {
  const wire = wireOf(toolCall) ?? {};
  const dynamic = wire.dynamic === true;
  const response = responseOf(approval, answers);
  const rawInput = toolCall.arguments;
  const input = toolCall.parsedArguments ?? (rawInput === '' ? {} : rawInput);
  const fields: Record<string, unknown> = {
    toolName: dynamic ? toolCall.name : undefined,
    toolCallId: toolCall.id,
    title: stringOf(wire.title),
    toolMetadata: wire.toolMetadata,
    providerExecuted: typeof wire.providerExecuted === 'boolean' ? wire.providerExecuted : undefined,
    input,
    callProviderMetadata: wire.providerMetadata,
    approval: approval === undefined ? undefined : approvalOf(approval, response),
  };
  const type = dynamic ? 'dynamic-tool' : `tool-${toolCall.name}`;
  switch (toolCall.status) {
    case 'completed':
      return part(type, { ...fields, state: 'output-available', output: toolCall.result });
    case 'failed': {
      const invalidInput = toolCall.error?.code === 'invalid_tool_input';
      return part(type, {
        ...fields,
        state: 'output-error',
        input: invalidInput ? undefined : input,
        rawInput: invalidInput ? rawInput : undefined,
        errorText: toolCall.error?.message ?? 'The tool failed',
      });
    }
    case 'cancelled':
      if (toolCall.reason !== 'denied' && response?.approved !== false) return undefined;
      return part(type, { ...fields, state: 'output-denied' });
    case 'awaiting_execution':
    case 'running':
      if (approval === undefined) return part(type, { ...fields, state: 'input-available' });
      return part(type, { ...fields, state: response === undefined ? 'approval-requested' : 'approval-responded' });
    default:
      return undefined;
  }
}

function artifactPart(artifact: AgentArtifactState): AISDKUIMessagePart | undefined {
  const wire = wireOf(artifact);
  const providerMetadata = wire?.providerMetadata;
  switch (wire?.type) {
    case 'source-url':
      return part('source-url', {
        sourceId: wire.sourceId,
        url: artifact.uri,
        title: artifact.title,
        providerMetadata,
      });
    case 'source-document':
      return part('source-document', {
        sourceId: wire.sourceId,
        mediaType: artifact.mediaType ?? 'application/octet-stream',
        title: artifact.title ?? '',
        filename: artifact.name,
        providerMetadata,
      });
    case 'file':
      return part('file', {
        mediaType: artifact.mediaType ?? 'application/octet-stream',
        url: artifact.uri,
        providerMetadata,
      });
    default:
      return undefined;
  }
}

/** A shallow merge of metadata, as the `ai` package merges a message's metadata updates. */
function mergeMetadata(current: unknown, update: unknown): unknown {
  const isRecord = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);
  return isRecord(current) && isRecord(update) ? { ...(current as object), ...(update as object) } : update;
}

/**
 * A session's conversation from AgentState as AI SDK `UIMessage`s, the `messages` that
 * `DefaultChatTransport` posts, in the order the entities arrived. User and system messages
 * become messages of their own (text, and images and files with a URL, as `file` parts);
 * everything an assistant streamed goes into one assistant message per AI SDK message id
 * (`start`'s `messageId`, so a continuation's parts join the message it continues), or per
 * run for entities another provider made: text, reasoning, `step-start` for each step,
 * tool parts (`toolPart`), sources and files, then its `data-*` parts and its metadata.
 * `answers` (a continuation's) put the approvals they answer in `approval-responded`.
 *
 * Left out: other sessions, `tool` messages (results come from the tool calls), what a
 * `reset-step` dropped, `ai` 7-only parts (`reasoning-file`, `custom`) which an `ai` 6
 * server refuses, and transient data. Cost is linear in the size of the state.
 *
 * @example
 * const messages = toAISDKMessages(store.getSnapshot(), 'chat-1');
 * // [{ id: 'user-run-1', role: 'user', parts: [{ type: 'text', text: 'Weather in Oslo?' }] },
 * //  { id: 'msg-1', role: 'assistant', parts: [{ type: 'step-start' }, { type: 'tool-weather', toolCallId: 'call-1', state: 'output-available', input: { city: 'Oslo' }, output: { celsius: 4 } }] }]
 */
export function toAISDKMessages(
  state: AgentState,
  sessionId: string,
  answers: readonly AgentApprovalAnswer[] = [],
): AISDKUIMessage[] {
  const runIds = Object.values(state.runs)
    .filter((run) => run.sessionId === sessionId)
    .map((run) => run.id);
  const dropped = droppedKeys(state, runIds);
  const answerById = new Map(answers.map((answer) => [answer.approvalId, answer]));
  const approvalByToolCall = new Map<string, AgentApprovalState>();
  for (const approval of Object.values(state.approvals)) {
    if (approval.sessionId !== sessionId || approval.toolCallId === undefined) continue;
    approvalByToolCall.set(getAgentEntityKey(approval.runId, approval.toolCallId), approval);
  }
  const messages: AISDKUIMessage[] = [];
  const assistants = new Map<string, AISDKUIMessage>();
  const lastAssistantOfRun = new Map<string, AISDKUIMessage>();
  const assistantFor = (entity: AgentEntityBase): AISDKUIMessage => {
    const messageId = stringOf(wireOf(entity)?.messageId);
    const key = messageId === undefined ? `run:${entity.runId}` : `id:${messageId}`;
    let message = assistants.get(key);
    if (message === undefined) {
      message = { id: messageId ?? `${entity.runId}-assistant`, role: 'assistant', parts: [] };
      messages.push(message);
      assistants.set(key, message);
    }
    lastAssistantOfRun.set(entity.runId, message);
    return message;
  };
  for (const ref of state.order) {
    if (dropped.has(`${ref.kind}:${ref.key}`)) continue;
    if (ref.kind === 'message') {
      const message = getOwn(state.messages, ref.key);
      if (message === undefined || message.sessionId !== sessionId || message.role === 'tool') continue;
      if (message.role === 'assistant') {
        const text = typeof message.content === 'string' ? message.content : '';
        const providerMetadata = wireOf(message)?.providerMetadata;
        assistantFor(message).parts.push(part('text', { text, state: 'done', providerMetadata }));
        continue;
      }
      const parts = contentParts(message.content);
      if (parts.length === 0) continue;
      const id = stringOf(wireOf(message)?.messageId) ?? `${message.runId}-${message.id}`;
      messages.push({ id, role: message.role === 'user' ? 'user' : 'system', parts });
    } else if (ref.kind === 'reasoning') {
      const reasoning = getOwn(state.reasoning, ref.key);
      if (reasoning === undefined || reasoning.sessionId !== sessionId) continue;
      const providerMetadata = wireOf(reasoning)?.providerMetadata;
      assistantFor(reasoning).parts.push(
        part('reasoning', { text: reasoning.content, state: 'done', providerMetadata }),
      );
    } else if (ref.kind === 'toolCall') {
      const toolCall = getOwn(state.toolCalls, ref.key);
      if (toolCall === undefined || toolCall.sessionId !== sessionId) continue;
      const made = toolPart(toolCall, approvalByToolCall.get(ref.key), answerById);
      if (made !== undefined) assistantFor(toolCall).parts.push(made);
    } else if (ref.kind === 'task') {
      const task = getOwn(state.tasks, ref.key);
      if (task === undefined || task.sessionId !== sessionId || wireOf(task) === undefined) continue;
      assistantFor(task).parts.push({ type: 'step-start' });
    } else if (ref.kind === 'artifact') {
      const artifact = getOwn(state.artifacts, ref.key);
      if (artifact === undefined || artifact.sessionId !== sessionId) continue;
      const made = artifactPart(artifact);
      if (made !== undefined) assistantFor(artifact).parts.push(made);
    }
  }
  for (const activity of Object.values(state.activities)) {
    if (activity.sessionId !== sessionId || !activity.activityType.startsWith('data-')) continue;
    if (dropped.has(`activity:${activity.key}`)) continue;
    const message = lastAssistantOfRun.get(activity.runId);
    if (message === undefined) continue;
    const prefix = `${activity.activityType}:`;
    const id = activity.id.startsWith(prefix) ? activity.id.slice(prefix.length) : undefined;
    message.parts.push(part(activity.activityType, { id, data: activity.content }));
  }
  for (const runId of runIds) {
    for (const record of getOwn(state.extensions, runId) ?? []) {
      if (record.name !== 'ai-sdk.message-metadata' || typeof record.data !== 'object' || record.data === null)
        continue;
      const { messageId, metadata } = record.data as { messageId?: unknown; metadata?: unknown };
      const message = typeof messageId === 'string' ? assistants.get(`id:${messageId}`) : lastAssistantOfRun.get(runId);
      if (message !== undefined) message.metadata = mergeMetadata(message.metadata, metadata);
    }
  }
  return messages;
}
