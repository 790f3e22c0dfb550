import type { AgentEntityRef, AgentState, AgentToolCallState } from '../../machines/agentState';
import { getOwn } from '../../machines/agentStateProjection';
import { getAgentEntityKey } from '../../protocol/getAgentEntityKey';
import { stepOf } from './agentStepEvents';

type StepEntity = { id: string; key: string; runId: string; meta?: Record<string, unknown> };

/** The run a step's entities are filed under in the model's view: one per step, so each is a turn of its own. */
const stepRunId = (runId: string, step: number): string => `${runId}#step-${step}`;

/**
 * The conversation as the model of an agent should read it. An agent's run holds several
 * model steps, and the providers' history builders (`toOpenAIMessages`,
 * `toAnthropicMessages`) make one assistant turn per run: here each step's messages,
 * reasoning and tool calls (marked `meta.agentMachines.step`) are filed under a run of their
 * own, so each step is its turn, followed by its tool results. A tool call whose approval was
 * `modified` shows the arguments it ran with. Everything else is the state as it is; records
 * that change are copies, the state given is not changed.
 *
 * @example
 * const history = toAgentStepHistory(store.getSnapshot());
 * toOpenAIMessages(history, 'chat-1'); // user, assistant (step 1) + tool, assistant (step 2)
 */
export function toAgentStepHistory(state: AgentState): AgentState {
  const modified = modifiedArguments(state);
  const renamed = new Map<string, string>();
  const moved = <Entity extends StepEntity>(records: Record<string, Entity>): Record<string, Entity> => {
    let out: Record<string, Entity> | undefined;
    for (const [key, record] of Object.entries(records)) {
      const step = stepOf(record.meta);
      const data = modified.get(key);
      if (step === undefined && data === undefined) continue;
      out ??= { ...records };
      let copy: Entity = { ...record };
      if (data !== undefined) copy = { ...copy, arguments: JSON.stringify(data), parsedArguments: data };
      if (step !== undefined) {
        const runId = stepRunId(record.runId, step);
        const newKey = getAgentEntityKey(runId, record.id);
        copy = { ...copy, runId, key: newKey };
        delete out[key];
        renamed.set(key, newKey);
        out[newKey] = copy;
      } else {
        out[key] = copy;
      }
    }
    return out ?? records;
  };
  const messages = moved(state.messages);
  const reasoning = moved(state.reasoning);
  const toolCalls = moved(state.toolCalls);
  if (renamed.size === 0 && modified.size === 0) return state;
  const order = state.order.map((ref): AgentEntityRef => {
    const key = renamed.get(ref.key);
    return key === undefined ? ref : { kind: ref.kind, key };
  });
  return { ...state, messages, reasoning, toolCalls, order };
}

/** The input each tool call ran with when its approval was `modified`, by the call's key. */
function modifiedArguments(state: AgentState): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const approval of Object.values(state.approvals)) {
    if (approval.decision !== 'modified' || approval.toolCallId === undefined || approval.resolvedData === undefined) {
      continue;
    }
    const key = getAgentEntityKey(approval.runId, approval.toolCallId);
    const toolCall: AgentToolCallState | undefined = getOwn(state.toolCalls, key);
    if (toolCall !== undefined) out.set(key, approval.resolvedData);
  }
  return out;
}
