import { readUIMessageStream, type UIMessage, uiMessageChunkSchema } from 'ai';
import { describe, expect, it } from 'vitest';
import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { UIMessageChunk } from '../../providers/ai-sdk/uiMessageChunkSchema';
import { UIMessageChunkEncoder } from './UIMessageChunkEncoder';

/** Every chunk of the events' stream, the last run's terminal ending it. */
function encodeAll(events: AgentEvent[], messageId = 'run-1'): UIMessageChunk[] {
  const encoder = new UIMessageChunkEncoder(messageId);
  const chunks = encoder.start();
  for (const event of events) chunks.push(...encoder.encode(event));
  const terminal = events.at(-1);
  if (terminal !== undefined) chunks.push(...encoder.end(terminal));
  return chunks;
}

/** The chunks as the `ai` package reads them: each checked by its schema, the message it accumulates. */
async function readAsAISDK(chunks: UIMessageChunk[], message?: UIMessage): Promise<UIMessage | undefined> {
  const schema = uiMessageChunkSchema();
  for (const chunk of chunks) {
    const checked = await schema.validate?.(chunk);
    expect(checked?.success, JSON.stringify(chunk)).toBe(true);
  }
  const errors: unknown[] = [];
  const stream = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const snapshot of readUIMessageStream({
    stream,
    ...(message === undefined ? {} : { message }),
    onError: (error) => errors.push(error),
  })) {
    last = snapshot;
  }
  expect(errors).toEqual([]);
  return last;
}

const eventsOf = (runId: string, initialSequence = 0) =>
  createAgentEventFactory({ sessionId: 's1', runId, initialSequence, now: () => 1 });

describe('UIMessageChunkEncoder', () => {
  it('streams reasoning and text as parts of one message, each delta one chunk, the user message not echoed', async () => {
    const events = eventsOf('run-1');
    const log = [
      events.create('run.started', { input: { prompt: 'Hi' } }),
      events.create('message.started', { messageId: 'prompt', role: 'user', content: 'Hi' }),
      events.create('message.completed', { messageId: 'prompt' }),
      events.create('reasoning.started', { reasoningId: 'r1' }),
      events.create('reasoning.delta', { reasoningId: 'r1', delta: 'The user ' }),
      events.create('reasoning.delta', { reasoningId: 'r1', delta: 'greets.' }),
      events.create('reasoning.completed', { reasoningId: 'r1' }),
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('message.delta', { messageId: 'm1', delta: 'Hello' }),
      events.create('message.delta', { messageId: 'm1', delta: ' there' }),
      events.create('message.completed', { messageId: 'm1', content: 'Hello there' }),
      events.create('run.completed', {}),
    ];
    const chunks = encodeAll(log);
    expect(chunks).toEqual([
      { type: 'start', messageId: 'run-1' },
      { type: 'start-step' },
      { type: 'reasoning-start', id: 'r1' },
      { type: 'reasoning-delta', id: 'r1', delta: 'The user ' },
      { type: 'reasoning-delta', id: 'r1', delta: 'greets.' },
      { type: 'reasoning-end', id: 'r1' },
      { type: 'text-start', id: 'm1' },
      { type: 'text-delta', id: 'm1', delta: 'Hello' },
      { type: 'text-delta', id: 'm1', delta: ' there' },
      { type: 'text-end', id: 'm1' },
      { type: 'finish-step' },
      { type: 'finish', finishReason: 'stop' },
    ]);
    const message = await readAsAISDK(chunks);
    expect(message?.id).toBe('run-1');
    expect(message?.parts).toMatchObject([
      { type: 'step-start' },
      { type: 'reasoning', text: 'The user greets.', state: 'done' },
      { type: 'text', text: 'Hello there', state: 'done' },
    ]);
  });

  it('sends a completed message whose text came whole, and hides redacted reasoning', async () => {
    const events = eventsOf('run-1');
    const chunks = encodeAll([
      events.create('run.started', {}),
      events.create('reasoning.started', { reasoningId: 'secret', redacted: true }),
      events.create('reasoning.delta', { reasoningId: 'secret', delta: 'opaque' }),
      events.create('reasoning.completed', { reasoningId: 'secret' }),
      events.create('message.started', { messageId: 'm1', role: 'assistant' }),
      events.create('message.completed', { messageId: 'm1', content: [{ type: 'text', text: 'Whole.' }] }),
      events.create('run.completed', {}),
    ]);
    const message = await readAsAISDK(chunks);
    expect(message?.parts).toMatchObject([{ type: 'step-start' }, { type: 'text', text: 'Whole.', state: 'done' }]);
  });

  it('shows a tool call with streamed input, an approval request, and ends waiting with tool-calls', async () => {
    const events = eventsOf('run-1');
    const chunks = encodeAll([
      events.create('run.started', {}),
      events.create('tool.requested', { toolCallId: 'call_1', name: 'delete_files' }),
      events.create('tool.arguments_delta', { toolCallId: 'call_1', delta: '{"glob":' }),
      events.create('tool.arguments_delta', { toolCallId: 'call_1', delta: '"*.log"}' }),
      events.create('tool.arguments_completed', { toolCallId: 'call_1' }),
      events.create('approval.requested', { approvalId: 'approval-call_1', toolCallId: 'call_1' }),
      events.create('run.completed', { pendingToolCallIds: ['call_1'], pendingApprovalIds: ['approval-call_1'] }),
    ]);
    expect(chunks.slice(2, 7)).toEqual([
      { type: 'tool-input-start', toolCallId: 'call_1', toolName: 'delete_files' },
      { type: 'tool-input-delta', toolCallId: 'call_1', inputTextDelta: '{"glob":' },
      { type: 'tool-input-delta', toolCallId: 'call_1', inputTextDelta: '"*.log"}' },
      { type: 'tool-input-available', toolCallId: 'call_1', toolName: 'delete_files', input: { glob: '*.log' } },
      { type: 'tool-approval-request', approvalId: 'approval-call_1', toolCallId: 'call_1' },
    ]);
    expect(chunks.at(-1)).toEqual({ type: 'finish', finishReason: 'tool-calls' });
    const message = await readAsAISDK(chunks);
    expect(message?.parts[1]).toMatchObject({
      type: 'tool-delete_files',
      toolCallId: 'call_1',
      state: 'approval-requested',
      input: { glob: '*.log' },
      approval: { id: 'approval-call_1' },
    });
  });

  it("continues the same message in the run that continues it: the tool's output, then the answer", async () => {
    const first = eventsOf('run-1');
    const waiting = encodeAll([
      first.create('run.started', {}),
      first.create('tool.requested', { toolCallId: 'call_1', name: 'delete_files', arguments: '{"glob":"*.log"}' }),
      first.create('approval.requested', { approvalId: 'approval-call_1', toolCallId: 'call_1' }),
      first.create('run.completed', { pendingToolCallIds: ['call_1'], pendingApprovalIds: ['approval-call_1'] }),
    ]);
    const asked = (await readAsAISDK(waiting)) as UIMessage;
    // The client answers, as useChat's addToolApprovalResponse does.
    const answered = {
      ...asked,
      parts: asked.parts.map((part) =>
        part.type === 'tool-delete_files'
          ? { ...part, state: 'approval-responded', approval: { id: 'approval-call_1', approved: true } }
          : part,
      ),
    } as UIMessage;
    const next = eventsOf('run-2');
    const continuation = encodeAll(
      [
        next.create('run.started', { continuesRunId: 'run-1' }),
        next.create('approval.resolved', { approvalId: 'approval-call_1', decision: 'approved' }),
        next.create('tool.running', { toolCallId: 'call_1' }),
        next.create('tool.completed', { toolCallId: 'call_1', result: { deleted: '*.log' } }),
        next.create('message.started', { messageId: 'm2', role: 'assistant' }),
        next.create('message.delta', { messageId: 'm2', delta: 'Deleted.' }),
        next.create('message.completed', { messageId: 'm2' }),
        next.create('run.completed', {}),
      ],
      'run-1',
    );
    expect(continuation.slice(2, 3)).toEqual([
      { type: 'tool-output-available', toolCallId: 'call_1', output: { deleted: '*.log' } },
    ]);
    const message = await readAsAISDK(continuation, answered);
    expect(message?.id).toBe('run-1');
    expect(message?.parts).toMatchObject([
      { type: 'step-start' },
      { type: 'tool-delete_files', state: 'output-available', output: { deleted: '*.log' } },
      { type: 'step-start' },
      { type: 'text', text: 'Deleted.' },
    ]);
  });

  it('denies a rejected tool call and shows a failing tool its error', async () => {
    const events = eventsOf('run-1');
    const chunks = encodeAll([
      events.create('run.started', {}),
      events.create('tool.requested', { toolCallId: 'gated', name: 'deploy', arguments: '{}' }),
      events.create('approval.requested', { approvalId: 'a1', toolCallId: 'gated' }),
      events.create('approval.resolved', { approvalId: 'a1', decision: 'rejected' }),
      events.create('tool.cancelled', { toolCallId: 'gated', reason: 'rejected' }),
      events.create('tool.requested', { toolCallId: 'broken', name: 'lookup', arguments: '{"q":1}' }),
      events.create('tool.running', { toolCallId: 'broken' }),
      events.create('tool.failed', { toolCallId: 'broken', error: { message: 'Lookup is down', code: 'tool_error' } }),
      events.create('tool.requested', { toolCallId: 'garbled', name: 'lookup', arguments: '{"q":' }),
      events.create('tool.arguments_completed', { toolCallId: 'garbled' }),
      events.create('run.completed', {}),
    ]);
    expect(chunks).toContainEqual({ type: 'tool-output-denied', toolCallId: 'gated' });
    expect(chunks).toContainEqual({ type: 'tool-output-error', toolCallId: 'broken', errorText: 'Lookup is down' });
    const message = await readAsAISDK(chunks);
    expect(message?.parts.slice(1)).toMatchObject([
      { type: 'tool-deploy', state: 'output-denied' },
      { type: 'tool-lookup', state: 'output-error', errorText: 'Lookup is down', input: { q: 1 } },
      { type: 'tool-lookup', state: 'output-error', errorText: 'The tool call arguments are not valid JSON' },
    ]);
  });

  it('keeps tasks, artifacts, activities, the shared state and approvals of no tool call as data parts, each replaced by its id', async () => {
    const events = eventsOf('run-1');
    const chunks = encodeAll([
      events.create('run.started', {}),
      events.create('task.created', { taskId: 't1', title: 'Index' }),
      events.create('task.updated', { taskId: 't1', progress: 0.5 }),
      events.create('task.completed', { taskId: 't1', result: { files: 3 } }),
      events.create('artifact.created', { artifactId: 'a1', mediaType: 'text/markdown', content: '# Draft' }),
      events.create('artifact.updated', { artifactId: 'a1', version: 2, content: '# Final' }),
      events.create('artifact.completed', { artifactId: 'a1' }),
      events.create('state.snapshot', { snapshot: { count: 1 } }),
      events.create('state.delta', { patch: [{ op: 'replace', path: '/count', value: 2 }] }),
      events.create('activity.snapshot', { activityId: 'plan', activityType: 'plan', content: { steps: ['a'] } }),
      events.create('activity.delta', { activityId: 'plan', patch: [{ op: 'add', path: '/steps/-', value: 'b' }] }),
      events.create('approval.requested', { approvalId: 'go', description: 'Go on?' }),
      events.create('approval.resolved', { approvalId: 'go', decision: 'approved' }),
      events.create('run.completed', {}),
    ]);
    const message = await readAsAISDK(chunks);
    expect(message?.parts.slice(1)).toEqual([
      {
        type: 'data-task',
        id: 't1',
        data: { title: 'Index', progress: 0.5, result: { files: 3 }, status: 'completed' },
      },
      {
        type: 'data-artifact',
        id: 'a1',
        data: { mediaType: 'text/markdown', content: '# Final', version: 2, status: 'completed' },
      },
      { type: 'data-state', id: 'state', data: { count: 2 } },
      { type: 'data-activity', id: 'plan', data: { activityType: 'plan', content: { steps: ['a', 'b'] } } },
      { type: 'data-approval', id: 'go', data: { status: 'resolved', decision: 'approved' } },
    ]);
  });

  it('ends a cancelled run with abort and a failed one with error, closing what it left open', () => {
    const cancelled = eventsOf('run-1');
    const aborted = encodeAll([
      cancelled.create('run.started', {}),
      cancelled.create('message.started', { messageId: 'm1', role: 'assistant' }),
      cancelled.create('message.delta', { messageId: 'm1', delta: 'Half' }),
      cancelled.create('run.cancelled', { reason: 'user' }),
    ]);
    expect(aborted.slice(-3)).toEqual([
      { type: 'text-end', id: 'm1' },
      { type: 'finish-step' },
      { type: 'abort', reason: 'user' },
    ]);
    const failing = eventsOf('run-2');
    const failed = encodeAll([
      failing.create('run.started', {}),
      failing.create('run.failed', { error: { message: 'The model is unavailable', code: 'provider_error' } }),
    ]);
    expect(failed.slice(-2)).toEqual([
      { type: 'finish-step' },
      { type: 'error', errorText: 'The model is unavailable' },
    ]);
  });

  it('opens a part whose start came before the stream began, and gives one step per run of a replayed chain', async () => {
    const events = eventsOf('run-1', 3);
    const midway = encodeAll([
      events.create('message.delta', { messageId: 'm1', delta: 'later ' }),
      events.create('message.delta', { messageId: 'm1', delta: 'text' }),
      events.create('message.completed', { messageId: 'm1' }),
    ]);
    expect(midway).toEqual([
      { type: 'start', messageId: 'run-1' },
      { type: 'text-start', id: 'm1' },
      { type: 'text-delta', id: 'm1', delta: 'later ' },
      { type: 'text-delta', id: 'm1', delta: 'text' },
      { type: 'text-end', id: 'm1' },
    ]);
    const first = eventsOf('run-1');
    const second = eventsOf('run-2');
    const chain = encodeAll([
      first.create('run.started', {}),
      first.create('message.started', { messageId: 'm1', role: 'assistant', content: 'One.' }),
      first.create('message.completed', { messageId: 'm1' }),
      first.create('run.completed', { pendingToolCallIds: ['c1'] }),
      second.create('run.started', { continuesRunId: 'run-1' }),
      second.create('message.started', { messageId: 'm1', role: 'assistant', content: 'Two.' }),
      second.create('message.completed', { messageId: 'm1' }),
      second.create('run.completed', {}),
    ]);
    expect(chain.filter((chunk) => chunk.type.endsWith('-step')).map((chunk) => chunk.type)).toEqual([
      'start-step',
      'finish-step',
      'start-step',
      'finish-step',
    ]);
    const message = await readAsAISDK(chain);
    expect(
      message?.parts.filter((part) => part.type === 'text').map((part) => (part as { text: string }).text),
    ).toEqual(['One.', 'Two.']);
  });
});
