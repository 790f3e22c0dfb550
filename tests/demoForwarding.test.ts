// The demo server with the real services' variables set: `/v1/chat/completions` and
// `/v1/messages` forward the page's requests to the service the environment names, add the
// key there, and stream the answer back as it comes. No internet here: two loopback servers
// stand in for OpenAI-compatible chat completions and Anthropic Messages, speak their wire
// formats, and record what reaches them. The page's own providers (`createDemoProviders`)
// talk to the demo server, as the page does.
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from 'vitest';
import {
  createDemoProviders,
  DEMO_CONVERSATION_KEY,
  type DemoProviderId,
  inputFor,
} from '../examples/demo/app/demoProviders';
import { type DemoServer, startDemoServer } from '../examples/demo/server';
import { runAgentProviderFixture } from '../providers/testing/runAgentProviderFixture';
import { startHttpServer, type TestServer } from './support/httpServer';
import { type SharedDemoPage, sharedDemoPage } from './support/sharedDemoPage';

const OPENAI_KEY = `sk-test-${randomUUID()}`;
const ANTHROPIC_KEY = `ak-test-${randomUUID()}`;
const PROMPT = 'Weather in Lisbon?';

const openAIChunk = (delta: object, finishReason: string | null = null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-live',
    object: 'chat.completion.chunk',
    created: 1733000000,
    model: 'gpt-test',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  })}\n\n`;

/** What the stand-in OpenAI-compatible service streams: reasoning, then text, then usage. */
const OPENAI_FRAMES = [
  openAIChunk({ role: 'assistant', content: null, reasoning_content: 'One city, ' }),
  openAIChunk({ reasoning_content: 'no tool needed.' }),
  openAIChunk({ content: 'Lisbon is ', reasoning_content: null }),
  openAIChunk({ content: '19 °C, live.' }),
  openAIChunk({}, 'stop'),
  `data: ${JSON.stringify({
    id: 'chatcmpl-live',
    object: 'chat.completion.chunk',
    created: 1733000000,
    model: 'gpt-test',
    choices: [],
    usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 },
  })}\n\n`,
  'data: [DONE]\n\n',
];

const anthropicEvent = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** What the stand-in Anthropic service streams: a signed thinking block, then a text block. */
const ANTHROPIC_FRAMES = [
  anthropicEvent('message_start', {
    message: {
      id: 'msg_live',
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'claude-test',
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 1 },
    },
  }),
  anthropicEvent('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } }),
  anthropicEvent('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'One city, ' } }),
  anthropicEvent('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'no tool needed.' } }),
  anthropicEvent('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM' } }),
  anthropicEvent('content_block_stop', { index: 0 }),
  anthropicEvent('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
  anthropicEvent('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Lisbon is ' } }),
  anthropicEvent('content_block_delta', { index: 1, delta: { type: 'text_delta', text: '19 °C, live.' } }),
  anthropicEvent('content_block_stop', { index: 1 }),
  anthropicEvent('message_delta', {
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: 9 },
  }),
  anthropicEvent('message_stop', {}),
];

/**
 * When set, the stand-in services send their first frame, then wait for it before the rest:
 * a client that resolves it on reading the first frame proves the demo server passed that
 * frame on before the answer was complete.
 */
let holdAfterFirstFrame: Promise<void> | undefined;

async function streamFrames(response: ServerResponse, frames: readonly string[]): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'request-id': 'req_live' });
  for (const [index, frame] of frames.entries()) {
    response.write(frame);
    if (index === 0 && holdAfterFirstFrame !== undefined) await holdAfterFirstFrame;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  response.end();
}

const failAfter = (ms: number, message: string) =>
  new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error(message)), ms).unref());

/** Every header, `name: value`, one a line. */
function headersText(headers: Headers): string {
  const lines: string[] = [];
  headers.forEach((value, name) => {
    lines.push(`${name}: ${value}`);
  });
  return lines.join('\n');
}

/** What a page request to the demo server sent, read back from the spied `fetch`. */
interface PageRequest {
  url: string;
  headers: Headers;
  body: Record<string, unknown>;
}

describe('the demo server forwards to the real services named by its environment', () => {
  let openAIService: TestServer;
  let anthropicService: TestServer;
  let demo: DemoServer;
  let demoPage: SharedDemoPage;
  let fetchSpy: MockInstance<typeof fetch>;
  let pageProviders: ReturnType<typeof createDemoProviders>;

  beforeAll(async () => {
    openAIService = await startHttpServer((_request, response) => streamFrames(response, OPENAI_FRAMES));
    anthropicService = await startHttpServer((_request, response) => streamFrames(response, ANTHROPIC_FRAMES));
    // The page built once for this run, by the first file to ask (this one or another). A build
    // reads no server environment (buildDemoApp takes none), so these are the files a server
    // with these keys would build and serve; they are checked for the keys below.
    demoPage = await sharedDemoPage('agent-machines-demo-forwarding-');
    demo = await startDemoServer({
      port: 0,
      outDir: demoPage.directory,
      build: false,
      env: {
        OPENAI_BASE_URL: `${openAIService.url}/v1`,
        OPENAI_API_KEY: OPENAI_KEY,
        OPENAI_MODEL: 'gpt-test',
        ANTHROPIC_API_KEY: ANTHROPIC_KEY,
        ANTHROPIC_BASE_URL: anthropicService.url,
        ANTHROPIC_MODEL: 'claude-test',
      },
    });
    // Spied before the providers are made: their transports bind `fetch` when created. The
    // demo server's own requests to the services go through it too.
    fetchSpy = vi.spyOn(globalThis, 'fetch');
    pageProviders = createDemoProviders(new URL(demo.url).origin, DEMO_CONVERSATION_KEY);
  }, 120_000);

  afterAll(async () => {
    fetchSpy?.mockRestore();
    await demo?.close();
    await Promise.all([openAIService?.close(), anthropicService?.close()]);
    await demoPage?.release();
  });

  /** The last request the page's provider sent to the demo server at `path`. */
  function lastPageRequest(path: string): PageRequest {
    const call = fetchSpy.mock.calls.findLast(([url]) => String(url) === new URL(path, demo.url).href);
    if (call === undefined) throw new Error(`the page sent nothing to ${path}`);
    const [url, init] = call;
    return { url: String(url), headers: new Headers(init?.headers), body: JSON.parse(String(init?.body)) };
  }

  const keysIn = (text: string) => [OPENAI_KEY, ANTHROPIC_KEY].filter((key) => text.includes(key));

  it('/api/config says both endpoints are live, and nothing more', async () => {
    const response = await fetch(new URL('/api/config', demo.url));
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ openai: 'live', anthropic: 'live' });
    expect(keysIn(text)).toEqual([]);
    expect(keysIn(headersText(response.headers))).toEqual([]);
  });

  it('the page it serves holds neither key', async () => {
    const html = await (await fetch(demo.url)).text();
    const assets = [...html.matchAll(/(?:src|href)="\/?([^"]+\.(?:js|css))"/g)].map((match) => match[1] ?? '');
    expect(assets.length).toBeGreaterThan(0);
    const files = await Promise.all(assets.map(async (asset) => (await fetch(new URL(asset, demo.url))).text()));
    expect(keysIn([html, ...files].join('\n'))).toEqual([]);
  });

  it('OpenAI-compatible: the page’s request reaches the service with the key and the model from the environment', async () => {
    const run = await runAgentProviderFixture(pageProviders.openai, inputFor('openai', PROMPT));

    const sent = lastPageRequest('/v1/chat/completions');
    expect(sent.headers.get('authorization')).toBeNull();
    expect(sent.body.messages).toEqual([{ role: 'user', content: PROMPT }]);
    expect(openAIService.requests).toHaveLength(1);
    const [received] = openAIService.requests;
    expect(received?.method).toBe('POST');
    expect(received?.url).toBe('/v1/chat/completions');
    expect(received?.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(received?.headers['content-type']).toBe('application/json');
    // The page's body as it was sent, but for the model, which the environment chose.
    expect(JSON.parse(received?.body ?? '')).toEqual({ ...sent.body, model: 'gpt-test' });

    // The answer came back and the page's provider read it all: reasoning, then the text.
    expect(run.result.status).toBe('completed');
    expect(run.validation).toEqual([]);
    expect(Object.values(run.state.reasoning).map(({ content, status }) => ({ content, status }))).toEqual([
      { content: 'One city, no tool needed.', status: 'completed' },
    ]);
    expect(Object.values(run.state.messages).map(({ role, content, status }) => ({ role, content, status }))).toEqual([
      { role: 'user', content: PROMPT, status: 'completed' },
      { role: 'assistant', content: 'Lisbon is 19 °C, live.', status: 'completed' },
    ]);
    expect(run.state.issues).toEqual([]);
    expect(keysIn(JSON.stringify(run.events))).toEqual([]);
  });

  it('Anthropic: the page’s request reaches the service with the key, the API version and the model from the environment', async () => {
    const run = await runAgentProviderFixture(pageProviders.anthropic, inputFor('anthropic', PROMPT));

    const sent = lastPageRequest('/v1/messages');
    expect(sent.headers.get('x-api-key')).toBeNull();
    expect(sent.body.messages).toEqual([{ role: 'user', content: PROMPT }]);
    expect(anthropicService.requests).toHaveLength(1);
    const [received] = anthropicService.requests;
    expect(received?.method).toBe('POST');
    expect(received?.url).toBe('/v1/messages');
    expect(received?.headers['x-api-key']).toBe(ANTHROPIC_KEY);
    expect(received?.headers['anthropic-version']).toBe('2023-06-01');
    expect(received?.headers.authorization).toBeUndefined();
    expect(JSON.parse(received?.body ?? '')).toEqual({ ...sent.body, model: 'claude-test' });

    expect(run.result.status).toBe('completed');
    expect(run.validation).toEqual([]);
    expect(
      Object.values(run.state.reasoning).map(({ content, status, redacted }) => ({ content, status, redacted })),
    ).toEqual([{ content: 'One city, no tool needed.', status: 'completed', redacted: false }]);
    expect(Object.values(run.state.messages).map(({ role, content, status }) => ({ role, content, status }))).toEqual([
      { role: 'user', content: PROMPT, status: 'completed' },
      { role: 'assistant', content: 'Lisbon is 19 °C, live.', status: 'completed' },
    ]);
    expect(run.state.issues).toEqual([]);
    expect(keysIn(JSON.stringify(run.events))).toEqual([]);
  });

  it.each<{ providerId: DemoProviderId; path: string; frames: readonly string[] }>([
    { providerId: 'openai', path: '/v1/chat/completions', frames: OPENAI_FRAMES },
    { providerId: 'anthropic', path: '/v1/messages', frames: ANTHROPIC_FRAMES },
  ])(
    '$path streams the answer back byte for byte, frame by frame, with no key in it',
    async ({ providerId, path, frames }) => {
      // The body the page's provider sends, replayed as it was.
      await runAgentProviderFixture(pageProviders[providerId], inputFor(providerId, PROMPT));
      const service = providerId === 'openai' ? openAIService : anthropicService;
      const requestsBefore = service.requests.length;
      let releaseRest = () => {};
      holdAfterFirstFrame = new Promise<void>((resolve) => {
        releaseRest = resolve;
      });
      try {
        const response = await fetch(new URL(path, demo.url), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(lastPageRequest(path).body),
        });
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
        expect(keysIn(headersText(response.headers))).toEqual([]);
        const reader = response.body?.getReader();
        if (reader === undefined) throw new Error(`${path} answered without a body`);
        const decoder = new TextDecoder();
        let received = '';
        // Until the first frame is here, the service holds the rest back: a demo server that
        // waited for the whole answer would never pass it on.
        const readFirstFrame = async () => {
          while (!received.endsWith('\n\n')) {
            const read = await reader.read();
            if (read.done) break;
            received += decoder.decode(read.value, { stream: true });
          }
        };
        await Promise.race([readFirstFrame(), failAfter(5_000, `${path} held the first frame back`)]);
        expect(received).toBe(frames[0]);
        releaseRest();
        for (let read = await reader.read(); !read.done; read = await reader.read()) {
          received += decoder.decode(read.value, { stream: true });
        }
        expect(received).toBe(frames.join(''));
        expect(keysIn(received)).toEqual([]);
      } finally {
        releaseRest();
        holdAfterFirstFrame = undefined;
      }
      expect(service.requests).toHaveLength(requestsBefore + 1);
    },
    15_000,
  );
});
