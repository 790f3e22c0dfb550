// Run ids and continuation keys are separate namespaces: a run named `continuation:<id>`
// neither blocks continuing run <id>, nor is it refused because run <id> is being continued.
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import { createAgentHost } from '../server/createAgentHost';
import { readEvents, serveHost } from './support/hostClient';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start() {
  const host = createAgentHost({
    providers: {
      tool: createLocalAgentProvider({
        script: (_input, turn) =>
          turn.continuation === undefined
            ? { steps: [{ type: 'tool', name: 'lookup', argumentDeltas: ['{}'] }] }
            : { steps: [{ type: 'text', deltas: ['Done.'] }, { type: 'stall' }] },
      }),
      stall: createLocalAgentProvider({
        script: { steps: [{ type: 'text', deltas: ['Working'] }, { type: 'stall' }] },
      }),
    },
    onError: () => {},
  });
  const served = await serveHost(host.fetch);
  cleanups.push(async () => {
    await served.close();
    await host.close();
  });
  /** Starts run `t1` and waits until it ended waiting for its tool's result. */
  const waitingRun = async (sessionId: string) => {
    await host.startRun(sessionId, { provider: 'tool', input: {}, runId: 't1' });
    await readEvents(`${served.url}/sessions/${sessionId}/events?runId=t1`, {
      stop: (frames) => frames.some((frame) => frame.data.includes('"run.completed"')),
    });
  };
  const continuation = { runId: 't1', approvals: [], toolResults: [{ toolCallId: 'tool-0', result: 1 }] };
  return { host, waitingRun, continuation };
}

describe('continuation keys', () => {
  it('a running run named continuation:t1 does not block continuing t1', async () => {
    const { host, waitingRun, continuation } = await start();
    await waitingRun('n1');
    await host.startRun('n1', { provider: 'stall', input: {}, runId: 'continuation:t1' });
    const continued = await host.startRun('n1', { provider: 'tool', input: {}, runId: 't2', continuation });
    expect(continued.runId).toBe('t2');
  });

  it('continuing t1 does not take the run id continuation:t1', async () => {
    const { host, waitingRun, continuation } = await start();
    await waitingRun('n2');
    await host.startRun('n2', { provider: 'tool', input: {}, runId: 't2', continuation });
    const named = await host.startRun('n2', { provider: 'stall', input: {}, runId: 'continuation:t1' });
    expect(named.runId).toBe('continuation:t1');
  });
});
