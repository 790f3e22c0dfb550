import type { AgentState } from '../../machines/agentState';
import { type AgentStore, createAgentStore } from '../../machines/createAgentStore';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AnyAgentProvider } from '../../providers/AgentProvider';
import type { AgentConnectionChange } from '../../providers/reconnect';
import { type AgentRunResult, type RunAgentProviderOptions, runAgentProvider } from '../../providers/runAgentProvider';

export interface RunLog {
  result: AgentRunResult | undefined;
  error: unknown;
  events: AgentEvent[];
  cursors: string[];
  changes: AgentConnectionChange[];
  store: AgentStore;
  state: AgentState;
}

type Extra = Partial<Omit<RunAgentProviderOptions<unknown, unknown, unknown, unknown>, 'provider'>>;

/**
 * Runs `provider` as run r1 of session s1 into a strict store, with short backoff waits
 * (`initialDelay: 5`, jitter 0.5), recording events, cursors and connection changes;
 * the call's rejection is returned, not thrown.
 */
export async function runLog(
  provider: AnyAgentProvider,
  extra: Extra = {},
  store: AgentStore = createAgentStore({ protocolMode: 'strict' }),
): Promise<RunLog> {
  const events: AgentEvent[] = [];
  const cursors: string[] = [];
  const changes: AgentConnectionChange[] = [];
  let result: AgentRunResult | undefined;
  let error: unknown;
  try {
    result = await runAgentProvider({
      provider,
      input: { prompt: 'Summarize the log' },
      sessionId: 's1',
      runId: 'r1',
      reconnect: { initialDelay: 5 },
      random: () => 0.5,
      ...extra,
      onEvent: (event, admission) => {
        events.push(event);
        store.dispatch(event, admission);
        extra.onEvent?.(event, admission);
      },
      onCursor: (cursor) => {
        cursors.push(cursor);
        extra.onCursor?.(cursor);
      },
      onConnection: (change) => {
        changes.push(change);
        extra.onConnection?.(change);
      },
    });
  } catch (caught) {
    error = caught;
  }
  return { result, error, events, cursors, changes, store, state: store.getSnapshot() };
}

/** Connection changes as short strings: `connecting 0`, `reconnecting 1 2` (attempt, delay), `failed`. */
export function describeChanges(changes: readonly AgentConnectionChange[]): string[] {
  return changes.map((change) => {
    if (change.type === 'connecting') return `connecting ${change.attempt}`;
    if (change.type === 'reconnecting') return `reconnecting ${change.attempt} ${change.delayMs}`;
    return change.type;
  });
}
