import { type HostProcess, startHostProcess } from './hostProcesses';

const INSTANCE = new URL('./agentHostInstance.ts', import.meta.url).pathname;

/**
 * Starts an agent host instance (`agentHostInstance.ts`) in its own Node process on the Redis at
 * `redisUrl`, its model at `modelURL` and its tool's endpoint at `toolsURL`, and waits (at most
 * 60 s) until it listens.
 */
export function startAgentHostProcess(options: {
  redisUrl: string;
  keyPrefix: string;
  instanceId: string;
  modelURL: string;
  toolsURL: string;
  leaseMs?: number;
}): Promise<HostProcess> {
  const { modelURL, toolsURL, leaseMs = 4_000, ...rest } = options;
  return startHostProcess({ ...rest, leaseMs, script: INSTANCE, env: { MODEL_URL: modelURL, TOOLS_URL: toolsURL } });
}
