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
      for await (const _ of provider.executeCommand?.(command, {
        signal: new AbortController().signal,
        initialSequence: 0,
      }) ?? []) {
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

describe('the host client follows redirects only within the origin', () => {
  it('refuses a redirect to another origin: nothing, body or credentials, reaches it', async () => {
    const elsewhere = await startHttpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
    const redirecting = await startHttpServer((request, response) => {
      response.writeHead(307, { location: `${elsewhere.url}${request.url}` });
      response.end();
    });
    try {
      const headers = { authorization: 'Bearer t0ken', 'x-api-key': 'k3y' };
      const provider = createAgentEventProvider({ baseURL: redirecting.url, sessionId: 's1', headers });
      const result = await runAgentProvider({
        provider,
        input: { provider: 'p', input: {} },
        sessionId: 's1',
        runId: 'r1',
        reconnect: { maxAttempts: 3, initialDelay: 1, maxDelay: 1 },
        onEvent: () => {},
      });
      expect(result.status).toBe('failed');
      expect(result.error).toMatchObject({
        code: 'http_error',
        status: 307,
        message: `POST ${redirecting.url}/sessions/s1/runs was redirected to another origin (${elsewhere.url}): refused`,
      });

      const following = await followAgentSession({
        baseURL: redirecting.url,
        sessionId: 's1',
        headers,
        after: '1',
        store: createAgentStore(),
        signal: new AbortController().signal,
        reconnect: { maxAttempts: 3, initialDelay: 1, maxDelay: 1 },
      }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(following).toMatchObject({ code: 'http_error', status: 307 });
      expect(elsewhere.requests).toEqual([]);
      // Not retried: one POST /runs, one GET /events.
      expect(redirecting.requests.map((request) => request.method)).toEqual(['POST', 'GET']);
    } finally {
      await redirecting.close();
      await elsewhere.close();
    }
  });

  it('follows a redirect within the origin, with the body', async () => {
    const host = await startHttpServer((request, response) => {
      if (request.url.startsWith('/old/')) {
        response.writeHead(308, { location: request.url.replace('/old/', '/new/') });
        response.end();
        return;
      }
      response.writeHead(409, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code: 'run_exists', message: `body ${request.body}` } }));
    });
    try {
      const client = createAgentHostClient({ baseURL: `${host.url}/old`, sessionId: 's1' });
      const answer = await client.postJSON('runs', { runId: 'r1' }, new AbortController().signal);
      expect(answer).toMatchObject({
        ok: false,
        status: 409,
        refusal: { code: 'run_exists', message: 'body {"runId":"r1"}' },
      });
      expect(host.requests.map((request) => request.url)).toEqual(['/old/sessions/s1/runs', '/new/sessions/s1/runs']);
    } finally {
      await host.close();
    }
  });
});
