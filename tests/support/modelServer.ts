import { type RecordedRequest, startHttpServer, type TestServer } from './httpServer';

/** The wire formats the server speaks: OpenAI-compatible Chat Completions, or Anthropic Messages. */
export type ModelWireFormat = 'openai' | 'anthropic';

/** One tool call of a reply; `arguments` is sent as it is when a string (invalid JSON too), else as JSON. */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: string | Record<string, unknown>;
}

/** What the model answers one request with: thinking, text, tool calls, in that order; or an HTTP error. */
export interface ModelReply {
  reasoning?: string;
  text?: string;
  toolCalls?: ModelToolCall[];
  /** Answer with this status and a JSON error body instead of a stream. */
  error?: { status: number; message: string };
}

/** A tool result as the request carried it, in either format. */
export interface ModelToolResult {
  toolCallId: string;
  content: string;
  isError: boolean;
}

/** One request the model got, parsed. */
export interface ModelRequest {
  index: number;
  body: Record<string, unknown>;
  /** The request's `messages`, as sent. */
  messages: Array<{ role: string; content?: unknown; [field: string]: unknown }>;
  /** The tool results in the messages, in order. */
  toolResults: ModelToolResult[];
}

export interface ModelServer extends TestServer {
  /** The base URL the provider is given: `${url}/v1` for OpenAI-compatible, `url` for Anthropic. */
  baseURL: string;
  /** Every request so far, parsed. */
  modelRequests(): ModelRequest[];
}

function toolResultsOf(format: ModelWireFormat, messages: ModelRequest['messages']): ModelToolResult[] {
  const results: ModelToolResult[] = [];
  for (const message of messages) {
    if (format === 'openai' && message.role === 'tool') {
      const content = String(message.content);
      results.push({ toolCallId: String(message.tool_call_id), content, isError: content.startsWith('Error: ') });
    }
    if (format === 'anthropic' && message.role === 'user' && Array.isArray(message.content)) {
      for (const block of message.content as Array<Record<string, unknown>>) {
        if (block.type !== 'tool_result') continue;
        const content = typeof block.content === 'string' ? block.content : '';
        results.push({ toolCallId: String(block.tool_use_id), content, isError: block.is_error === true });
      }
    }
  }
  return results;
}

function parseRequest(format: ModelWireFormat, request: RecordedRequest, index: number): ModelRequest {
  const body = JSON.parse(request.body) as Record<string, unknown>;
  const messages = (body.messages ?? []) as ModelRequest['messages'];
  return { index, body, messages, toolResults: toolResultsOf(format, messages) };
}

/** A string in two pieces (when it has two characters), so the client reads it as deltas. */
function halves(text: string): string[] {
  if (text.length < 2) return [text];
  const middle = Math.floor(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)];
}

const argumentText = (call: ModelToolCall): string =>
  typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);

function openAIFrames(reply: ModelReply, index: number): string[] {
  const id = `chatcmpl-${index}`;
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created: 1733000000,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    })}\n\n`;
  const frames = [chunk({ role: 'assistant', content: '' })];
  for (const piece of halves(reply.reasoning ?? '')) if (piece !== '') frames.push(chunk({ reasoning_content: piece }));
  for (const piece of halves(reply.text ?? '')) if (piece !== '') frames.push(chunk({ content: piece }));
  for (const [callIndex, call] of (reply.toolCalls ?? []).entries()) {
    frames.push(
      chunk({
        tool_calls: [{ index: callIndex, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    );
    for (const piece of halves(argumentText(call))) {
      frames.push(chunk({ tool_calls: [{ index: callIndex, function: { arguments: piece } }] }));
    }
  }
  frames.push(chunk({}, (reply.toolCalls ?? []).length > 0 ? 'tool_calls' : 'stop'));
  frames.push(
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1733000000, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 } })}\n\n`,
  );
  frames.push('data: [DONE]\n\n');
  return frames;
}

function anthropicFrames(reply: ModelReply, index: number): string[] {
  const frame = (type: string, data: Record<string, unknown>) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const frames = [
    frame('message_start', {
      message: {
        id: `msg_${index}`,
        type: 'message',
        role: 'assistant',
        content: [],
        model: 'claude-sonnet-4-5',
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 20, output_tokens: 1 },
      },
    }),
  ];
  let block = 0;
  if (reply.reasoning !== undefined) {
    frames.push(frame('content_block_start', { index: block, content_block: { type: 'thinking', thinking: '' } }));
    for (const piece of halves(reply.reasoning)) {
      frames.push(frame('content_block_delta', { index: block, delta: { type: 'thinking_delta', thinking: piece } }));
    }
    frames.push(
      frame('content_block_delta', { index: block, delta: { type: 'signature_delta', signature: `sig-${index}` } }),
    );
    frames.push(frame('content_block_stop', { index: block }));
    block += 1;
  }
  if (reply.text !== undefined) {
    frames.push(frame('content_block_start', { index: block, content_block: { type: 'text', text: '' } }));
    for (const piece of halves(reply.text)) {
      frames.push(frame('content_block_delta', { index: block, delta: { type: 'text_delta', text: piece } }));
    }
    frames.push(frame('content_block_stop', { index: block }));
    block += 1;
  }
  for (const call of reply.toolCalls ?? []) {
    frames.push(
      frame('content_block_start', {
        index: block,
        content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
      }),
    );
    for (const piece of halves(argumentText(call))) {
      frames.push(
        frame('content_block_delta', { index: block, delta: { type: 'input_json_delta', partial_json: piece } }),
      );
    }
    frames.push(frame('content_block_stop', { index: block }));
    block += 1;
  }
  const stopReason = (reply.toolCalls ?? []).length > 0 ? 'tool_use' : 'end_turn';
  frames.push(
    frame('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 10 } }),
  );
  frames.push(frame('message_stop', {}));
  return frames;
}

/**
 * A model on a real loopback server (127.0.0.1): each request to `/v1/chat/completions`
 * (OpenAI-compatible) or `/v1/messages` (Anthropic) is answered, as a stream in that wire
 * format, with what `reply` makes of it, reading the request as a model would (its messages,
 * the tool results in them). Frames go out one by one, each in its own write.
 *
 * @example
 * const server = await startModelServer('openai', (request) =>
 *   request.toolResults.length === 0
 *     ? { toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }] }
 *     : { text: `It is ${JSON.parse(request.toolResults[0].content).celsius} °C.` },
 * );
 */
export async function startModelServer(
  format: ModelWireFormat,
  reply: (request: ModelRequest) => ModelReply | Promise<ModelReply>,
): Promise<ModelServer> {
  let count = 0;
  const server = await startHttpServer(async (request, response) => {
    const parsed = parseRequest(format, request, count);
    count += 1;
    let answer: ModelReply;
    try {
      answer = await reply(parsed);
    } catch (error) {
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: error instanceof Error ? error.message : String(error) } }));
      return;
    }
    if (answer.error !== undefined) {
      response.writeHead(answer.error.status, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: answer.error.message } }));
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const frames = format === 'openai' ? openAIFrames(answer, parsed.index) : anthropicFrames(answer, parsed.index);
    for (const frame of frames) {
      if (response.destroyed) return;
      response.write(frame);
      await new Promise((resolve) => setImmediate(resolve));
    }
    response.end();
  });
  return {
    ...server,
    baseURL: format === 'openai' ? `${server.url}/v1` : server.url,
    modelRequests: () => server.requests.map((request, index) => parseRequest(format, request, index)),
  };
}
