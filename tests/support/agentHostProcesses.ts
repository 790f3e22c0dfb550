import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { HostProcess } from './hostProcesses';

const INSTANCE = new URL('./agentHostInstance.ts', import.meta.url).pathname;

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once('exit', () => resolve()));

/**
 * Starts an agent host instance (`agentHostInstance.ts`) in its own Node process on the Redis at
 * `redisUrl`, its model at `modelURL` and its tool's endpoint at `toolsURL`, and waits (at most
 * 60 s) until it listens.
 */
export async function startAgentHostProcess(options: {
  redisUrl: string;
  keyPrefix: string;
  instanceId: string;
  modelURL: string;
  toolsURL: string;
  leaseMs?: number;
}): Promise<HostProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', INSTANCE], {
    env: {
      ...process.env,
      REDIS_URL: options.redisUrl,
      KEY_PREFIX: options.keyPrefix,
      INSTANCE_ID: options.instanceId,
      LEASE_MS: String(options.leaseMs ?? 4_000),
      MODEL_URL: options.modelURL,
      TOOLS_URL: options.toolsURL,
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
