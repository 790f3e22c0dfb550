// One host instance in its own process, on a Redis event log, whose `assistant` is an agent
// (createAgent) on an OpenAI-compatible model: what a deployment of an agent runs per machine.
// Started by `startAgentHostProcess`; prints `{"url": ...}` once it listens.
// Environment: REDIS_URL, KEY_PREFIX, INSTANCE_ID, LEASE_MS, MODEL_URL (the model's base URL),
// TOOLS_URL: the `deploy` tool (it needs approval) posts each execution there and returns the answer.
import * as z from 'zod/mini';
import { createAgent } from '../../providers/agent/createAgent';
import { defineAgentTool } from '../../providers/agent/defineAgentTool';
import { createOpenAICompatibleAgentProvider } from '../../providers/openai/createOpenAICompatibleAgentProvider';
import { createAgentHost } from '../../server/createAgentHost';
import { createRedisEventLog } from '../../server/redis/createRedisEventLog';
import { serveHostInstance } from './serveHostInstance';

const env = process.env;
const instanceId = env.INSTANCE_ID as string;
const leaseMs = Number(env.LEASE_MS ?? 4_000);

const deploy = defineAgentTool({
  name: 'deploy',
  description: 'Deploys a service',
  inputSchema: z.object({ service: z.string() }),
  needsApproval: true,
  execute: async (input, { signal, runId, toolCallId }) => {
    const response = await fetch(`${env.TOOLS_URL}/deploy`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ instanceId, runId, toolCallId, input }),
      signal,
    });
    return response.json();
  },
});

const log = createRedisEventLog({ url: env.REDIS_URL as string, keyPrefix: env.KEY_PREFIX ?? 'agent-machines:' });
const host = createAgentHost({
  eventLog: log,
  instanceId,
  runLeaseMs: leaseMs,
  heartbeatMs: 200,
  commandTimeoutMs: 3 * leaseMs,
  onError: () => {},
  providers: {
    assistant: createAgent({
      model: createOpenAICompatibleAgentProvider({
        baseURL: env.MODEL_URL as string,
        apiKey: 'sk-test',
        model: 'gpt-4o-mini',
      }),
      tools: [deploy],
    }),
  },
});
serveHostInstance(host, log);
