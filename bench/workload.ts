// The benchmark workload, generated deterministically, and its encodings as SSE text in
// three wire formats: AG-UI (with @ag-ui/encoder), OpenAI-compatible chunks, and the AI
// SDK's UI message stream.
import { EventEncoder } from '@ag-ui/encoder';
import { createAgentStore } from '../machines/createAgentStore';
import { createAgentEventFactory } from '../protocol/createAgentEventFactory';
import type { AgentEvent } from '../protocol/eventSchemas';

export interface Workload {
  textDeltas: string[];
  reasoningDeltas: string[];
  tools: Array<{ id: string; name: string; argumentDeltas: string[] }>;
}

/** A small deterministic generator (mulberry32), so every run streams the same bytes. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  'agent',
  'state',
  'stream',
  'token',
  'machine',
  'delta',
  'event',
  'tool',
  'Zürich',
  'naïve',
  'café',
  '数据',
  '🙂',
];

function deltas(count: number, next: () => number): string[] {
  const out: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const length = 4 + Math.floor(next() * 5);
    let text = '';
    while (text.length < length) text += `${WORDS[Math.floor(next() * WORDS.length)]} `;
    out.push(text.slice(0, length));
  }
  return out;
}

/** One run: `textDeltas` text deltas (4-8 characters), 5,000 reasoning deltas, 20 tool calls of 50 argument deltas. */
export function createWorkload(textDeltas: number): Workload {
  const next = random(20261201);
  const tools = Array.from({ length: 20 }, (_, index) => {
    const pieces = [`{"query":"`, ...deltas(48, next).map((delta) => delta.replaceAll('"', "'")), `","n":${index}}`];
    return { id: `call_${index}`, name: 'search', argumentDeltas: pieces };
  });
  return { textDeltas: deltas(textDeltas, next), reasoningDeltas: deltas(5_000, next), tools };
}

export function eventCount(workload: Workload): number {
  return workload.textDeltas.length + workload.reasoningDeltas.length + workload.tools.length * 50;
}

export function encodeAgUI(workload: Workload): string {
  const encoder = new EventEncoder();
  const parts: string[] = [];
  const emit = (event: Record<string, unknown>) => parts.push(encoder.encode(event as never));
  emit({ type: 'RUN_STARTED', threadId: 'thread', runId: 'run' });
  emit({ type: 'REASONING_START', messageId: 'think' });
  emit({ type: 'REASONING_MESSAGE_START', messageId: 'think', role: 'reasoning' });
  for (const delta of workload.reasoningDeltas) emit({ type: 'REASONING_MESSAGE_CONTENT', messageId: 'think', delta });
  emit({ type: 'REASONING_MESSAGE_END', messageId: 'think' });
  emit({ type: 'REASONING_END', messageId: 'think' });
  emit({ type: 'TEXT_MESSAGE_START', messageId: 'answer', role: 'assistant' });
  for (const delta of workload.textDeltas) emit({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'answer', delta });
  emit({ type: 'TEXT_MESSAGE_END', messageId: 'answer' });
  for (const tool of workload.tools) {
    emit({ type: 'TOOL_CALL_START', toolCallId: tool.id, toolCallName: tool.name, parentMessageId: 'answer' });
    for (const delta of tool.argumentDeltas) emit({ type: 'TOOL_CALL_ARGS', toolCallId: tool.id, delta });
    emit({ type: 'TOOL_CALL_END', toolCallId: tool.id });
  }
  emit({ type: 'RUN_FINISHED', threadId: 'thread', runId: 'run' });
  return parts.join('');
}

export function encodeOpenAI(workload: Workload): string {
  const parts: string[] = [];
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    parts.push(
      `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1, model: 'bench', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
    );
  chunk({ role: 'assistant', content: '' });
  for (const delta of workload.reasoningDeltas) chunk({ reasoning_content: delta });
  for (const delta of workload.textDeltas) chunk({ content: delta });
  for (const [index, tool] of workload.tools.entries()) {
    chunk({ tool_calls: [{ index, id: tool.id, type: 'function', function: { name: tool.name, arguments: '' } }] });
    for (const delta of tool.argumentDeltas) chunk({ tool_calls: [{ index, function: { arguments: delta } }] });
  }
  chunk({}, 'tool_calls');
  parts.push(
    `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1, model: 'bench', choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } })}\n\n`,
  );
  parts.push('data: [DONE]\n\n');
  return parts.join('');
}

export function encodeUIMessageStream(workload: Workload): string {
  const parts: string[] = [];
  const emit = (chunk: Record<string, unknown>) => parts.push(`data: ${JSON.stringify(chunk)}\n\n`);
  emit({ type: 'start', messageId: 'answer' });
  emit({ type: 'start-step' });
  emit({ type: 'reasoning-start', id: 'think' });
  for (const delta of workload.reasoningDeltas) emit({ type: 'reasoning-delta', id: 'think', delta });
  emit({ type: 'reasoning-end', id: 'think' });
  emit({ type: 'text-start', id: 'text' });
  for (const delta of workload.textDeltas) emit({ type: 'text-delta', id: 'text', delta });
  emit({ type: 'text-end', id: 'text' });
  for (const tool of workload.tools) {
    emit({ type: 'tool-input-start', toolCallId: tool.id, toolName: tool.name });
    for (const delta of tool.argumentDeltas)
      emit({ type: 'tool-input-delta', toolCallId: tool.id, inputTextDelta: delta });
    emit({
      type: 'tool-input-available',
      toolCallId: tool.id,
      toolName: tool.name,
      input: JSON.parse(tool.argumentDeltas.join('')),
    });
  }
  emit({ type: 'finish-step' });
  emit({ type: 'finish' });
  parts.push('data: [DONE]\n\n');
  return parts.join('');
}

/** The bytes as a fetch Response that delivers them in 16 KiB reads, calling `onRead` before each. */
export function responseOf(bytes: Uint8Array, onRead?: () => void): Response {
  let offset = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      onRead?.();
      if (offset >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.subarray(offset, offset + 16_384));
      offset += 16_384;
    },
  });
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
}

/**
 * A store holding one run with `count` finished messages and one live message, and
 * `deltaCount` deltas for the live one, made before any timing.
 */
export function storeWithEntities(count: number, deltaCount: number) {
  const events = createAgentEventFactory({ sessionId: 's', runId: 'r', createEventId: (n) => `e${n}` });
  const store = createAgentStore();
  const setup: AgentEvent[] = [events.create('run.started', {})];
  for (let index = 0; index < count; index += 1) {
    const messageId = `old-${index}`;
    setup.push(
      events.create('message.started', { messageId, role: 'assistant' }),
      events.create('message.delta', { messageId, delta: 'earlier text' }),
      events.create('message.completed', { messageId }),
    );
  }
  setup.push(events.create('message.started', { messageId: 'live', role: 'assistant' }));
  store.batch(setup);
  store.getSnapshot();
  const deltas = Array.from({ length: deltaCount }, () =>
    events.create('message.delta', { messageId: 'live', delta: 'tok ' }),
  );
  return { store, deltas };
}
