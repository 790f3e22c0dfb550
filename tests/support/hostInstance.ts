// One host instance in its own process, on a Redis event log: what a deployment runs per
// machine. Started by `startHostProcess`; prints `{"url": ...}` once it listens.
// Environment: REDIS_URL, or REDIS_CLUSTER_NODES (node URLs, comma-separated) for a Redis Cluster; KEY_PREFIX,
// INSTANCE_ID, LEASE_MS (default 1000).
import { createLocalAgentProvider } from '../../providers/local/createLocalAgentProvider';
import { createAgentHost } from '../../server/createAgentHost';
import { createRedisEventLog } from '../../server/redis/createRedisEventLog';
import { serveHostInstance } from './serveHostInstance';

const env = process.env;
const leaseMs = Number(env.LEASE_MS ?? 1_000);
const keyPrefix = env.KEY_PREFIX ?? 'agent-machines:';
const log =
  env.REDIS_CLUSTER_NODES === undefined
    ? createRedisEventLog({ url: env.REDIS_URL as string, keyPrefix })
    : createRedisEventLog({
        cluster: { rootNodes: env.REDIS_CLUSTER_NODES.split(',').map((url) => ({ url })) },
        keyPrefix,
      });
const host = createAgentHost({
  eventLog: log,
  instanceId: env.INSTANCE_ID as string,
  runLeaseMs: leaseMs,
  heartbeatMs: 200,
  // Longer than a lease: a command for the run of an instance that died waits until its lease
  // is gone, then answers run_unavailable, not a timeout.
  commandTimeoutMs: 3 * leaseMs,
  onError: () => {},
  providers: {
    // Forty words, 25 ms apart: long enough to follow it from another instance mid-run.
    slow: createLocalAgentProvider({
      script: { steps: [{ type: 'text', deltas: Array.from({ length: 40 }, (_, i) => `w${i} `) }], delayMs: 25 },
    }),
    stall: createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Working'] }, { type: 'stall' }] } }),
    approval: createLocalAgentProvider({
      script: {
        steps: [
          { type: 'approval', description: 'Deploy?', waitFor: 'command' },
          { type: 'text', deltas: ['Deployed.'] },
        ],
      },
    }),
  },
});
serveHostInstance(host, log);
