import type { AgentMessageContent } from '../../protocol/contentSchemas';
import type { AgentEvent, AgentEventOf } from '../../protocol/eventSchemas';
import type { UIMessageChunk } from '../../providers/ai-sdk/uiMessageChunkSchema';
import { defined, UIDataPartEncoder } from './UIDataPartEncoder';

/** A tool call as the stream has shown it so far. */
interface ToolCallSeen {
  name: string;
  /** The argument text streamed so far. */
  argumentText: string;
  /** `tool-input-available` (or `tool-input-error`) was sent: the client has the whole input. */
  inputSent: boolean;
}

/** An open text or reasoning part: whether any of its text was sent yet. */
interface OpenPart {
  streamed: boolean;
}

/** The text of message content: a string as it is, the text parts of structured content joined. */
function textOf(content: AgentMessageContent | undefined): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  let text = '';
  for (const part of content) if (part.type === 'text') text += (part as { text: string }).text;
  return text;
}

/** A tool's argument text as the input the AI SDK shows: its JSON, `{}` when empty, `undefined` when not JSON. */
function parseInput(text: string): { valid: true; input: unknown } | { valid: false } {
  if (text.trim() === '') return { valid: true, input: {} };
  try {
    return { valid: true, input: JSON.parse(text) as unknown };
  } catch {
    return { valid: false };
  }
}

/**
 * Turns the AgentEvents of one assistant message (a run, and the runs that continue it) into
 * the chunks of the AI SDK's UI message stream, one event at a time, in constant work per
 * delta. `start()` opens the message with its id; every run is a step (`start-step`,
 * `finish-step`); `end(terminal)` closes the stream with the last run's outcome: `finish`
 * (`finishReason: 'tool-calls'` when the run waits for input, else `stop`), `abort` when it
 * was cancelled, `error` when it failed.
 *
 * Assistant messages become text parts, reasoning reasoning parts (redacted reasoning is not
 * shown), tool calls tool parts (`tool-{name}`) with their input, output, error or denial, and
 * an approval of a tool call that tool's `tool-approval-request` (its `approvalId` is the
 * approval's id, which the client answers with). Tasks, artifacts, activities, the shared
 * state and approvals of no tool call are `data-task`, `data-artifact`, `data-activity`,
 * `data-state` and `data-approval` parts whose `id` is the entity's, so each update replaces
 * the part. The user's own message is not echoed. A delta of a part whose start the stream
 * never showed (a stream that begins mid-run) opens the part first.
 *
 * @example
 * const encoder = new UIMessageChunkEncoder('run-1');
 * const chunks = [...encoder.start(), ...events.flatMap((event) => encoder.encode(event))];
 */
export class UIMessageChunkEncoder {
  private readonly texts = new Map<string, OpenPart>();
  private readonly reasonings = new Map<string, OpenPart>();
  /** Messages and reasoning of the current run that are not shown: the user's, redacted ones. */
  private readonly hidden = new Set<string>();
  private readonly tools = new Map<string, ToolCallSeen>();
  /** The tool call each approval is about. */
  private readonly approvalTools = new Map<string, string>();
  private readonly deniedTools = new Set<string>();
  /** Approvals of no tool call, shown as `data-approval` parts. */
  private readonly dataApprovals = new Set<string>();
  private readonly dataParts = new UIDataPartEncoder();
  private stepOpen = false;

  constructor(private readonly messageId: string) {}

  /** The stream's first chunk: the assistant message's id, so a replay or a continuation updates the same message. */
  start(): UIMessageChunk[] {
    return [{ type: 'start', messageId: this.messageId }];
  }

  /** The chunks of one event, in order; none for an event the stream does not show. */
  encode(event: AgentEvent): UIMessageChunk[] {
    switch (event.type) {
      case 'run.started':
        return this.runStarted();
      case 'run.completed':
      case 'run.failed':
      case 'run.cancelled':
        return this.runEnded();
      case 'message.started':
        return this.messageStarted(event);
      case 'message.delta':
        return this.textDelta(event.payload.messageId, event.payload.delta);
      case 'message.completed':
        return this.textEnded(event.payload.messageId, textOf(event.payload.content));
      case 'message.failed':
      case 'message.cancelled':
        return this.textEnded(event.payload.messageId, '');
      case 'reasoning.started':
        return this.reasoningStarted(event);
      case 'reasoning.delta':
        return this.reasoningDelta(event.payload.reasoningId, event.payload.delta);
      case 'reasoning.completed':
        return this.reasoningEnded(event.payload.reasoningId, event.payload.content ?? '');
      case 'reasoning.failed':
      case 'reasoning.cancelled':
        return this.reasoningEnded(event.payload.reasoningId, '');
      case 'tool.requested':
        return this.toolRequested(event);
      case 'tool.arguments_delta':
        return this.argumentsDelta(event.payload.toolCallId, event.payload.delta);
      case 'tool.arguments_completed':
        return this.inputAvailable(event.payload.toolCallId, event.payload.arguments);
      case 'tool.running':
        return this.inputAvailable(event.payload.toolCallId, undefined);
      case 'tool.completed':
        return [
          ...this.inputAvailable(event.payload.toolCallId, undefined),
          {
            type: 'tool-output-available',
            toolCallId: event.payload.toolCallId,
            output: event.payload.result === undefined ? null : event.payload.result,
          },
        ];
      case 'tool.failed':
      case 'tool.cancelled':
        return this.toolEnded(event);
      case 'approval.requested':
        return this.approvalRequested(event);
      case 'approval.resolved':
        return this.approvalResolved(event);
      case 'task.created':
      case 'task.updated':
      case 'task.completed':
      case 'task.failed':
      case 'task.cancelled':
      case 'artifact.created':
      case 'artifact.updated':
      case 'artifact.completed':
      case 'artifact.failed':
      case 'state.snapshot':
      case 'state.delta':
      case 'activity.snapshot':
      case 'activity.delta':
        return this.dataParts.encode(event);
      default:
        return [];
    }
  }

  /** The last chunk of the stream, for the terminal event of its last run. */
  end(terminal: AgentEvent): UIMessageChunk[] {
    if (terminal.type === 'run.cancelled') {
      return [
        terminal.payload.reason === undefined ? { type: 'abort' } : { type: 'abort', reason: terminal.payload.reason },
      ];
    }
    if (terminal.type === 'run.failed') return [{ type: 'error', errorText: terminal.payload.error.message }];
    if (terminal.type !== 'run.completed') return [];
    const waiting =
      (terminal.payload.pendingToolCallIds?.length ?? 0) + (terminal.payload.pendingApprovalIds?.length ?? 0) > 0;
    return [{ type: 'finish', finishReason: waiting ? 'tool-calls' : 'stop' }];
  }

  private runStarted(): UIMessageChunk[] {
    // Entity ids are scoped by run: a new run may reuse a message or reasoning id.
    this.hidden.clear();
    const chunks = this.closeStep();
    this.stepOpen = true;
    chunks.push({ type: 'start-step' });
    return chunks;
  }

  private runEnded(): UIMessageChunk[] {
    return this.closeStep();
  }

  /** Closes the parts the run left open, then the step. */
  private closeStep(): UIMessageChunk[] {
    if (!this.stepOpen) return [];
    const chunks: UIMessageChunk[] = [];
    for (const id of this.texts.keys()) chunks.push({ type: 'text-end', id });
    for (const id of this.reasonings.keys()) chunks.push({ type: 'reasoning-end', id });
    this.texts.clear();
    this.reasonings.clear();
    this.stepOpen = false;
    chunks.push({ type: 'finish-step' });
    return chunks;
  }

  private messageStarted(event: AgentEventOf<'message.started'>): UIMessageChunk[] {
    const { messageId, role, content } = event.payload;
    if (role !== 'assistant') {
      this.hidden.add(messageId);
      return [];
    }
    this.hidden.delete(messageId);
    const text = textOf(content);
    this.texts.set(messageId, { streamed: text !== '' });
    const chunks: UIMessageChunk[] = [{ type: 'text-start', id: messageId }];
    if (text !== '') chunks.push({ type: 'text-delta', id: messageId, delta: text });
    return chunks;
  }

  private textDelta(id: string, delta: string): UIMessageChunk[] {
    if (this.hidden.has(id)) return [];
    const open = this.texts.get(id);
    if (open !== undefined) {
      open.streamed = true;
      return [{ type: 'text-delta', id, delta }];
    }
    this.texts.set(id, { streamed: true });
    return [
      { type: 'text-start', id },
      { type: 'text-delta', id, delta },
    ];
  }

  /** Closes a text part; `content` (the completed message's) is sent when no delta carried any of it. */
  private textEnded(id: string, content: string): UIMessageChunk[] {
    if (this.hidden.has(id)) return [];
    const open = this.texts.get(id);
    if (open === undefined && content === '') return [];
    const chunks: UIMessageChunk[] = open === undefined ? [{ type: 'text-start', id }] : [];
    if (open?.streamed !== true && content !== '') chunks.push({ type: 'text-delta', id, delta: content });
    chunks.push({ type: 'text-end', id });
    this.texts.delete(id);
    return chunks;
  }

  private reasoningStarted(event: AgentEventOf<'reasoning.started'>): UIMessageChunk[] {
    const { reasoningId, redacted, content } = event.payload;
    if (redacted === true) {
      this.hidden.add(reasoningId);
      return [];
    }
    this.hidden.delete(reasoningId);
    const text = content ?? '';
    this.reasonings.set(reasoningId, { streamed: text !== '' });
    const chunks: UIMessageChunk[] = [{ type: 'reasoning-start', id: reasoningId }];
    if (text !== '') chunks.push({ type: 'reasoning-delta', id: reasoningId, delta: text });
    return chunks;
  }

  private reasoningDelta(id: string, delta: string): UIMessageChunk[] {
    if (this.hidden.has(id)) return [];
    const open = this.reasonings.get(id);
    if (open !== undefined) {
      open.streamed = true;
      return [{ type: 'reasoning-delta', id, delta }];
    }
    this.reasonings.set(id, { streamed: true });
    return [
      { type: 'reasoning-start', id },
      { type: 'reasoning-delta', id, delta },
    ];
  }

  private reasoningEnded(id: string, content: string): UIMessageChunk[] {
    if (this.hidden.has(id)) return [];
    const open = this.reasonings.get(id);
    if (open === undefined && content === '') return [];
    const chunks: UIMessageChunk[] = open === undefined ? [{ type: 'reasoning-start', id }] : [];
    if (open?.streamed !== true && content !== '') chunks.push({ type: 'reasoning-delta', id, delta: content });
    chunks.push({ type: 'reasoning-end', id });
    this.reasonings.delete(id);
    return chunks;
  }

  private toolRequested(event: AgentEventOf<'tool.requested'>): UIMessageChunk[] {
    const { toolCallId, name } = event.payload;
    const argumentText = event.payload.arguments ?? '';
    this.tools.set(toolCallId, { name, argumentText, inputSent: false });
    const chunks: UIMessageChunk[] = [{ type: 'tool-input-start', toolCallId, toolName: name }];
    if (argumentText !== '') chunks.push({ type: 'tool-input-delta', toolCallId, inputTextDelta: argumentText });
    return chunks;
  }

  private argumentsDelta(toolCallId: string, delta: string): UIMessageChunk[] {
    const tool = this.tools.get(toolCallId);
    if (tool === undefined || tool.inputSent) return [];
    tool.argumentText += delta;
    return [{ type: 'tool-input-delta', toolCallId, inputTextDelta: delta }];
  }

  /** The tool's whole input, once: from `complete` (the completed arguments) when given, else what was streamed. */
  private inputAvailable(toolCallId: string, complete: string | undefined): UIMessageChunk[] {
    const tool = this.tools.get(toolCallId);
    if (tool === undefined || tool.inputSent) return [];
    tool.inputSent = true;
    if (complete !== undefined) tool.argumentText = complete;
    const parsed = parseInput(tool.argumentText);
    if (!parsed.valid) {
      return [
        {
          type: 'tool-input-error',
          toolCallId,
          toolName: tool.name,
          input: tool.argumentText,
          errorText: 'The tool call arguments are not valid JSON',
        },
      ];
    }
    return [{ type: 'tool-input-available', toolCallId, toolName: tool.name, input: parsed.input }];
  }

  private toolEnded(event: AgentEventOf<'tool.failed' | 'tool.cancelled'>): UIMessageChunk[] {
    const { toolCallId } = event.payload;
    const chunks = this.inputAvailable(toolCallId, undefined);
    const rejected =
      this.deniedTools.has(toolCallId) ||
      (event.type === 'tool.failed' && event.payload.error.code === 'approval_rejected');
    if (rejected) {
      chunks.push({ type: 'tool-output-denied', toolCallId });
      return chunks;
    }
    const errorText =
      event.type === 'tool.failed'
        ? event.payload.error.message
        : `The tool call was cancelled${event.payload.reason === undefined ? '' : ` (${event.payload.reason})`}`;
    chunks.push({ type: 'tool-output-error', toolCallId, errorText });
    return chunks;
  }

  private approvalRequested(event: AgentEventOf<'approval.requested'>): UIMessageChunk[] {
    const { approvalId, toolCallId, description, risk, data } = event.payload;
    if (toolCallId === undefined) {
      this.dataApprovals.add(approvalId);
      return [
        {
          type: 'data-approval',
          id: approvalId,
          data: defined({ status: 'waiting', description, risk, data }),
        },
      ];
    }
    this.approvalTools.set(approvalId, toolCallId);
    const chunks = this.inputAvailable(toolCallId, undefined);
    chunks.push({ type: 'tool-approval-request', approvalId, toolCallId });
    return chunks;
  }

  private approvalResolved(event: AgentEventOf<'approval.resolved'>): UIMessageChunk[] {
    const { approvalId, decision } = event.payload;
    const toolCallId = this.approvalTools.get(approvalId);
    if (toolCallId === undefined) {
      // An approval of a tool call this stream did not show is the client's own tool part, which it answered.
      if (!this.dataApprovals.has(approvalId)) return [];
      return [{ type: 'data-approval', id: approvalId, data: { status: 'resolved', decision } }];
    }
    if (decision === 'rejected' || decision === 'expired') this.deniedTools.add(toolCallId);
    return [];
  }
}
