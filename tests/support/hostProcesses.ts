import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const INSTANCE = new URL('./hostInstance.ts', import.meta.url).pathname;

/** A host instance running in its own Node process (`hostInstance.ts`). */
export interface HostProcess {
  url: string;
  child: ChildProcess;
  /** Stops it as a deployment would (SIGTERM: its runs end `cancelled`). */
  stop(): Promise<void>;
  /** Kills it at once (SIGKILL): its runs are left to expire. */
  kill(): Promise<void>;
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once('exit', () => resolve()));

/**
 * Starts a host instance on the Redis at `redisUrl`, or on the Redis Cluster of
 * `redisClusterNodes` (node URLs), and waits (at most 60 s) until it listens.
 * `script` is the instance to run (default `hostInstance.ts`), `env` what else it is given.
 */
export async function startHostProcess(options: {
  redisUrl?: string;
  redisClusterNodes?: readonly string[];
  keyPrefix: string;
  instanceId: string;
  leaseMs?: number;
  script?: string;
  env?: Record<string, string>;
}): Promise<HostProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', options.script ?? INSTANCE], {
    env: {
      ...process.env,
      ...(options.redisUrl === undefined ? {} : { REDIS_URL: options.redisUrl }),
      ...(options.redisClusterNodes === undefined ? {} : { REDIS_CLUSTER_NODES: options.redisClusterNodes.join(',') }),
      KEY_PREFIX: options.keyPrefix,
      INSTANCE_ID: options.instanceId,
      LEASE_MS: String(options.leaseMs ?? 1_000),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`host ${options.instanceId} did not start in 60 s`)), 60_000);
    child.once('exit', (code) => reject(new Error(`host ${options.instanceId} exited with ${code}`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', (line) => {
      clearTimeout(timer);
      resolve((JSON.parse(line) as { url: string }).url);
    });
  });
  return {
    url,
    child,
    async stop() {
      child.kill('SIGTERM');
      await exited(child);
    },
    async kill() {
      child.kill('SIGKILL');
      await exited(child);
    },
  };
}
