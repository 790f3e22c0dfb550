// A process of SSE clients for bench/server.ts, forked with an IPC channel: on `follow` it
// connects its share of the clients to the session, says `connected`, and once every client
// has the run's terminal event says `followed` with what they saw. It stays up for the next
// `follow` until `close`.
import { isDeepStrictEqual } from 'node:util';
import type { AgentState } from '../machines/agentState';
import { connectLoadClient, type LoadClientOptions, type LoadClientResult } from './serverClients';

/** What the bench asks a client process. */
export type ClientProcessRequest = { type: 'follow'; clients: number; options: LoadClientOptions } | { type: 'close' };

/** What one client saw, but its latencies and state (the process sends those once for all). */
export type LoadClientSummary = Omit<LoadClientResult, 'latencies' | 'state'>;

/** What a client process answers. */
export type ClientProcessMessage =
  | { type: 'ready' }
  | { type: 'connected' }
  | {
      type: 'followed';
      clients: LoadClientSummary[];
      /** Every client's latencies, one after the other. */
      latencies: Float64Array;
      /** The first client's final state; `differing` lists the clients whose state is not equal to it. */
      state: AgentState;
      differing: number[];
      /** User + system CPU time of this process from connecting to the last terminal event, in ms. */
      cpuMs: number;
    }
  | { type: 'failed'; message: string };

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

function send(message: ClientProcessMessage): void {
  process.send?.(message);
}

async function follow(clients: number, options: LoadClientOptions): Promise<void> {
  gc();
  const cpuBefore = process.cpuUsage();
  const connected = await Promise.all(Array.from({ length: clients }, () => connectLoadClient(options)));
  send({ type: 'connected' });
  const results = await Promise.all(connected.map((client) => client.done));
  const cpu = process.cpuUsage(cpuBefore);
  const first = results[0] as LoadClientResult;
  const differing: number[] = [];
  results.forEach((result, index) => {
    if (index > 0 && !isDeepStrictEqual(result.state, first.state)) differing.push(index);
  });
  const latencies = new Float64Array(results.reduce((sum, result) => sum + result.latencies.length, 0));
  let offset = 0;
  for (const result of results) {
    latencies.set(result.latencies, offset);
    offset += result.latencies.length;
  }
  send({
    type: 'followed',
    clients: results.map(({ latencies: _latencies, state: _state, ...summary }) => summary),
    latencies,
    state: first.state,
    differing,
    cpuMs: (cpu.user + cpu.system) / 1000,
  });
}

process.on('message', (request: ClientProcessRequest) => {
  if (request.type === 'close') {
    process.exit(0);
  }
  follow(request.clients, request.options).catch((error: unknown) => {
    send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  });
});
send({ type: 'ready' });
