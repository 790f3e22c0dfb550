import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import { describe, it } from 'vitest';

/** A redis-server this test process started, on 127.0.0.1. */
export interface TestRedisServer {
  /** `redis://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** Stops the server (SIGTERM) and resolves once it exited; safe to call twice. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 5_000;
const STOP_TIMEOUT_MS = 5_000;
const INSTALL_HINT = 'install it with `apt-get install -y redis-server` (or `brew install redis`)';

/** Whether `redis-server` is on the PATH. */
export function redisServerAvailable(): boolean {
  const result = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  return result.error === undefined && result.status === 0;
}

/** A port no one listens on right now: the one the OS gives a listener on port 0. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port === 0 ? reject(new Error('No free port')) : resolve(port)));
    });
  });
}

/** Resolves true when the server answers PING with PONG on a raw socket. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const finish = (answered: boolean) => {
      socket.destroy();
      resolve(answered);
    };
    socket.setTimeout(500, () => finish(false));
    socket.once('error', () => finish(false));
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
    socket.once('connect', () => socket.write('PING\r\n'));
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Starts a throwaway `redis-server` (no persistence) on a free port and resolves once it
 * answers PING (within 5 s, or rejects with the server's output).
 *
 * @example
 * const redis = await startRedisServer();
 * const log = createRedisEventLog({ url: redis.url });
 * // ...
 * await log.close();
 * await redis.stop();
 */
export async function startRedisServer(): Promise<TestRedisServer> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const collect = (chunk: Buffer) => {
    output = `${output}${chunk.toString('utf8')}`.slice(-4_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const spawnFailed = new Promise<Error>((resolve) => child.once('error', resolve));
  // A test process that dies without `stop` must not leave the server running.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited(child);
    clearTimeout(timer);
  };

  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const failure = await Promise.race([spawnFailed, new Promise<undefined>((resolve) => setTimeout(resolve, 50))]);
    if (failure !== undefined) throw new Error(`Could not start redis-server: ${failure.message}; ${INSTALL_HINT}`);
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}:\n${output}`);
    if (await answersPing(port)) return { url: `redis://127.0.0.1:${port}`, port, stop };
  }
  await stop();
  throw new Error(`redis-server on port ${port} did not answer PING within ${START_TIMEOUT_MS} ms:\n${output}`);
}

let skipNoticeShown = false;

/**
 * `describe` for tests that need a real Redis: runs `body` when `redis-server` is on the
 * PATH. Without it the block is skipped with one notice, or, when
 * `AGENT_MACHINES_REDIS_TESTS=required` (CI), replaced by a failing test saying why.
 *
 * @example
 * describeWithRedis('createRedisEventLog', () => {
 *   let redis: TestRedisServer;
 *   beforeAll(async () => { redis = await startRedisServer(); });
 *   afterAll(() => redis.stop());
 *   it('appends', async () => { ... });
 * });
 */
export function describeWithRedis(name: string, body: () => void): void {
  if (redisServerAvailable()) {
    describe(name, body);
    return;
  }
  if (process.env.AGENT_MACHINES_REDIS_TESTS === 'required') {
    describe(name, () => {
      it('needs redis-server', () => {
        throw new Error(`redis-server is not on the PATH and AGENT_MACHINES_REDIS_TESTS=required: ${INSTALL_HINT}`);
      });
    });
    return;
  }
  if (!skipNoticeShown) {
    skipNoticeShown = true;
    console.warn(
      `Redis tests skipped: redis-server is not on the PATH; ${INSTALL_HINT}, or set AGENT_MACHINES_REDIS_TESTS=required to fail instead.`,
    );
  }
  describe.skip(name, body);
}
