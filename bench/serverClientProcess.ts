// A process of SSE clients for bench/server.ts, forked with an IPC channel: on `follow` it
// connects its share of the clients (full or light readers) to the session, says `connected`,
// and once every client has the run's terminal event says `followed` with what they saw. It
// stays up for the next `follow` until `close`.
import { isDeepStrictEqual } from 'node:util';
import type { AgentState } from '../machines/agentState';
import { connectLoadClient, type LoadClientOptions, type LoadClientResult } from './serverClients';
import { connectLightLoadClient } from './serverLightClients';
import type { LoadReader } from './serverLoadReport';

/** What the bench asks a client process. */
export type ClientProcessRequest =
  | { type: 'follow'; clients: number; reader: LoadReader; options: LoadClientOptions }
  | { type: 'close' };

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
      /** The first client's final state (none from light readers); `differing` lists the clients whose state is not equal to it. */
      state: AgentState | undefined;
      differing: number[];
      /** User + system CPU time of this process from connecting to the last terminal event, in ms. */
      cpuMs: number;
    }
  | { type: 'failed'; message: string };

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

function send(message: ClientProcessMessage): void {
  process.send?.(message);
}

async function follow(clients: number, reader: LoadReader, options: LoadClientOptions): Promise<void> {
  gc();
  const connect = reader === 'light' ? connectLightLoadClient : connectLoadClient;
  const cpuBefore = process.cpuUsage();
  // The first alone: its first read starts the host's feed of the session, which serves the
  // others' first reads. Together, each would read the log to catch up, past the host's bound
  // on readers catching up at once (32: it answers 503 Retry-After).
  const opener = await connect(options);
  const others = await Promise.all(Array.from({ length: clients - 1 }, () => connect(options)));
  const connected = [opener, ...others];
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
  follow(request.clients, request.reader, request.options).catch((error: unknown) => {
    send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  });
});
send({ type: 'ready' });
