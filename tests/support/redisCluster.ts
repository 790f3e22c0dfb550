import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';

/** One redis-server of a test cluster. */
export interface TestRedisClusterNode {
  port: number;
  /** `redis://127.0.0.1:<port>` */
  url: string;
  /** The server's process id. */
  pid: number;
}

/** A Redis Cluster this test process started: three masters, one replica each, on 127.0.0.1. */
export interface TestRedisCluster {
  /** Every node, in the order `redis-cli --cluster create` was given them (masters first). */
  nodes: readonly TestRedisClusterNode[];
  /** What `createCluster({ rootNodes })` takes. */
  rootNodes: { url: string }[];
  /** Stops every node (SIGTERM, SIGKILL past 5 s), waits for them to exit and removes their directory; safe to call twice. */
  stop(): Promise<void>;
}

const NODE_COUNT = 6;
const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;
const POLL_MS = 50;
const INSTALL_HINT = 'install them with `apt-get install -y redis-server redis-tools` (or `brew install redis`)';

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

/**
 * Sends one inline command on a raw socket and resolves its reply's text (a bulk string's
 * body, a status line's text), or undefined when the server does not answer within 500 ms.
 */
export function askRedisNode(port: number, command: string): Promise<string | undefined> {
  return ask(port, command);
}

function ask(port: number, command: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const finish = (text: string | undefined) => {
      socket.destroy();
      resolve(text);
    };
    socket.setTimeout(500, () => finish(undefined));
    socket.once('error', () => finish(undefined));
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      const lineEnd = reply.indexOf('\r\n');
      if (lineEnd < 0) return;
      const head = reply.slice(0, lineEnd);
      if (head.startsWith('$')) {
        const length = Number(head.slice(1));
        if (reply.length >= lineEnd + 2 + length) finish(reply.slice(lineEnd + 2, lineEnd + 2 + length));
      } else {
        finish(head.slice(1));
      }
    });
    socket.once('connect', () => socket.write(`${command}\r\n`));
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Polls `check` every 50 ms until it holds, or throws `failure()` after `timeoutMs`. */
async function until(check: () => Promise<boolean>, timeoutMs: number, failure: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() >= deadline) throw new Error(failure());
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * Starts a throwaway Redis Cluster from `redis-server` and `redis-cli` (no persistence):
 * six nodes on free loopback ports, joined by `redis-cli --cluster create … --cluster-replicas 1`,
 * and resolves once `CLUSTER INFO` says `cluster_state:ok` on every node and each replica
 * follows its master (within 10 s, or rejects with the nodes' output). Needs Redis 7 for
 * sharded pub/sub.
 *
 * @example
 * const cluster = await startRedisCluster();
 * const log = createRedisEventLog({ cluster: { rootNodes: cluster.rootNodes } });
 * // ...
 * await log.close();
 * await cluster.stop();
 */
export async function startRedisCluster(
  options: {
    /**
     * `cluster-node-timeout`: how long a master may not answer before its replica takes over
     * (Redis's default is 15,000 ms; a failover test wants 1,000 or so).
     */
    nodeTimeoutMs?: number;
  } = {},
): Promise<TestRedisCluster> {
  const directory = await mkdtemp(join(tmpdir(), 'agent-machines-cluster-'));
  const children: ChildProcess[] = [];
  let output = '';
  const collect = (port: number) => (chunk: Buffer) => {
    output = `${output}[${port}] ${chunk.toString('utf8')}`.slice(-8_000);
  };
  // A test process that dies without `stop` must not leave the servers running.
  const killOnExit = () => {
    for (const child of children) child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      process.removeListener('exit', killOnExit);
      await Promise.all(
        children.map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
          await exited(child);
          clearTimeout(timer);
        }),
      );
      await rm(directory, { recursive: true, force: true });
    })();
    return stopped;
  };

  try {
    const ports: number[] = [];
    // Distinct ports: a port given twice by the OS (freed between two asks) would clash.
    while (ports.length < NODE_COUNT) {
      const port = await freePort();
      // The cluster bus listens on port + 10000: it must fit, and be free of the others.
      if (port + 10_000 > 65_535 || ports.some((other) => Math.abs(other - port) % 10_000 === 0)) continue;
      ports.push(port);
    }
    const nodes: TestRedisClusterNode[] = [];
    for (const port of ports) {
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--save',
          '',
          '--appendonly',
          'no',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(directory, `nodes-${port}.conf`),
          '--dir',
          directory,
          ...(options.nodeTimeoutMs === undefined ? [] : ['--cluster-node-timeout', String(options.nodeTimeoutMs)]),
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      children.push(child);
      child.stdout?.on('data', collect(port));
      child.stderr?.on('data', collect(port));
      const spawned = await new Promise<Error | undefined>((resolve) => {
        child.once('error', resolve);
        child.once('spawn', () => resolve(undefined));
      });
      if (spawned !== undefined || child.pid === undefined) {
        throw new Error(`Could not start redis-server: ${spawned?.message ?? 'no pid'}`);
      }
      nodes.push({ port, url: `redis://127.0.0.1:${port}`, pid: child.pid });
    }
    const describe = () => `the cluster on ports ${ports.join(', ')} did not form:\n${output}`;
    const exitedEarly = () => children.some((child) => child.exitCode !== null);
    await until(
      async () => {
        if (exitedEarly()) throw new Error(describe());
        return (await Promise.all(ports.map((port) => ask(port, 'PING')))).every((reply) => reply === 'PONG');
      },
      START_TIMEOUT_MS,
      describe,
    );

    const create = spawn(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '1', '--cluster-yes'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const createOutput: string[] = [];
    create.stdout?.on('data', (chunk: Buffer) => createOutput.push(chunk.toString('utf8')));
    create.stderr?.on('data', (chunk: Buffer) => createOutput.push(chunk.toString('utf8')));
    const created = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        create.kill('SIGKILL');
        reject(new Error(`redis-cli --cluster create did not end within ${START_TIMEOUT_MS} ms`));
      }, START_TIMEOUT_MS);
      create.once('error', (error) => {
        clearTimeout(timer);
        reject(new Error(`Could not run redis-cli: ${error.message}`));
      });
      create.once('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    if (created !== 0) throw new Error(`redis-cli --cluster create failed (${created}):\n${createOutput.join('')}`);

    const replicasLinked = async (port: number) => {
      const info = await ask(port, 'INFO replication');
      if (info === undefined) return false;
      if (info.includes('role:slave')) return info.includes('master_link_status:up');
      return /connected_slaves:1\b/.test(info);
    };
    await until(
      async () => {
        if (exitedEarly()) throw new Error(describe());
        const states = await Promise.all(ports.map((port) => ask(port, 'CLUSTER INFO')));
        if (!states.every((info) => info?.includes('cluster_state:ok'))) return false;
        return (await Promise.all(ports.map(replicasLinked))).every(Boolean);
      },
      START_TIMEOUT_MS,
      describe,
    );
    return { nodes, rootNodes: nodes.slice(0, 3).map((node) => ({ url: node.url })), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Whether `redis-server` (7 or later: sharded pub/sub) and `redis-cli` are on the PATH. */
export function redisClusterAvailable(): boolean {
  const server = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  const cli = spawnSync('redis-cli', ['--version'], { stdio: 'ignore' });
  const major = Number(/v=(\d+)\./.exec(server.stdout ?? '')?.[1] ?? 0);
  return server.error === undefined && server.status === 0 && cli.error === undefined && cli.status === 0 && major >= 7;
}

let skipNoticeShown = false;

/**
 * `describe` for tests that need a real Redis Cluster: runs `body` when `redis-server` 7+ and
 * `redis-cli` are on the PATH. Without them the block is skipped with one notice, or, when
 * `AGENT_MACHINES_REDIS_TESTS=required` (CI), replaced by a failing test saying why.
 *
 * @example
 * describeWithRedisCluster('createRedisEventLog on a cluster', () => {
 *   let cluster: TestRedisCluster;
 *   beforeAll(async () => { cluster = await startRedisCluster(); }, 20_000);
 *   afterAll(() => cluster.stop());
 *   it('appends', async () => { ... });
 * });
 */
export function describeWithRedisCluster(name: string, body: () => void): void {
  if (redisClusterAvailable()) {
    describe(name, body);
    return;
  }
  const why = `redis-server 7 or later and redis-cli are not on the PATH; ${INSTALL_HINT}`;
  if (process.env.AGENT_MACHINES_REDIS_TESTS === 'required') {
    describe(name, () => {
      it('needs redis-server 7 and redis-cli', () => {
        throw new Error(`${why}, and AGENT_MACHINES_REDIS_TESTS=required`);
      });
    });
    return;
  }
  if (!skipNoticeShown) {
    skipNoticeShown = true;
    console.warn(`Redis Cluster tests skipped: ${why}, or set AGENT_MACHINES_REDIS_TESTS=required to fail instead.`);
  }
  describe.skip(name, body);
}
