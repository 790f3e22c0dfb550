// Answers of the host are read with a bound: /runs, /commands and /state bodies are counted
// as they arrive (after their content encoding is undone) and refused past `maxResponseBytes`.
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { createAgentStore } from '../../machines/createAgentStore';
import { createAgentCommandFactory } from '../../protocol/createAgentCommandFactory';
import { startHttpServer } from '../../tests/support/httpServer';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { runAgentProvider } from '../runAgentProvider';
import { createAgentHostClient } from './agentHostClient';
import { createAgentEventProvider } from './createAgentEventProvider';
import { followAgentSession } from './followAgentSession';

/** 64 MiB of JSON once inflated, about 64 KiB on the wire. */
const BOMB = gzipSync(Buffer.from(`{"pad":"${'a'.repeat(64 * 1024 * 1024)}"}`));
const server = await startHttpServer((request, response) => {
  if (request.url.endsWith('/small/state')) {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ cursor: null, state: 'x'.repeat(2_000) }));
    return;
  }
  response.writeHead(request.url.includes('/refused/') ? 500 : 200, {
    'content-type': 'application/json',
    'content-encoding': 'gzip',
  });
  response.end(BOMB);
});
afterAll(() => server.close());

const tooLarge = (method: string, path: string, limit: number) => ({
  code: 'response_too_large',
  message: `${method} ${server.url}/sessions/${path} answered more than ${limit} bytes`,
});

describe('the host client reads answers with a bound', () => {
  it('refuses a /runs answer past the default limit (16 MiB): the run fails with response_too_large', async () => {
    const provider = createAgentEventProvider({ baseURL: server.url, sessionId: 's1' });
    const result = await runAgentProvider({
      provider,
      input: { provider: 'p', input: {} },
      sessionId: 's1',
      runId: 'r1',
      reconnect: false,
      onEvent: () => {},
    });
    expect(result.status).toBe('failed');
    expect(AgentTransportError.isInstance(result.error)).toBe(true);
    expect(result.error).toMatchObject(tooLarge('POST', 's1/runs', 16 * 1024 * 1024));
  });

  it('refuses a /commands answer past maxResponseBytes, as the command provider_error', async () => {
    const provider = createAgentEventProvider({ baseURL: server.url, sessionId: 's1', maxResponseBytes: 4096 });
    const command = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' }).create('run.cancel', {});
    let error: unknown;
    try {
      for await (const _ of provider.executeCommand?.(command, { signal: new AbortController().signal }) ?? []) {
        // Nothing is yielded.
      }
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'provider_error', cause: tooLarge('POST', 's1/commands', 4096) });
  });

  it('refuses a /state answer past maxResponseBytes: followAgentSession rejects with it', async () => {
    const error = await followAgentSession({
      baseURL: server.url,
      sessionId: 's1',
      store: createAgentStore(),
      signal: new AbortController().signal,
      maxResponseBytes: 1_000_000,
    }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(AgentTransportError.isInstance(error)).toBe(true);
    expect(error).toMatchObject(tooLarge('GET', 's1/state', 1_000_000));
  });

  it('bounds the body of a refusal too, and reads an answer under the limit whole', async () => {
    const refused = createAgentHostClient({ baseURL: server.url, sessionId: 'refused', maxResponseBytes: 1024 });
    await expect(refused.getJSON('state', new AbortController().signal)).rejects.toMatchObject(
      tooLarge('GET', 'refused/state', 1024),
    );
    const small = createAgentHostClient({ baseURL: server.url, sessionId: 'small', maxResponseBytes: 4096 });
    const answer = await small.getJSON('state', new AbortController().signal);
    expect(answer).toEqual({ ok: true, status: 200, body: { cursor: null, state: 'x'.repeat(2_000) } });
  });
});
