import type { AgentStore } from '../../machines/createAgentStore';
import type { AgentRunContinuation, AnyAgentProvider } from '../AgentProvider';
import type { AgentTool } from './defineAgentTool';

/** What an agent is, once `createAgent` has checked it. */
export interface AgentLoopConfig {
  model: AnyAgentProvider;
  /** The model's input for every step: the instructions and the tools, in its wire format. */
  modelInput: unknown;
  tools: ReadonlyMap<string, AgentTool>;
  maxSteps: number;
}

/** One run of an agent: a user's turn, or the continuation of a run that waited for input. */
export interface AgentTurn {
  sessionId: string;
  runId: string;
  now: () => number;
  continuation: AgentRunContinuation | undefined;
  /** The conversation and this run so far: every event of the run is applied to it. */
  history: AgentStore;
  /** Aborted by the run's signal, or by a `run.cancel` command. */
  controller: AbortController;
  /** The reason of a `run.cancel`. */
  cancelReason: string | undefined;
  /** Tool call ids the conversation has used: a model that repeats one gets it renamed. */
  takenToolCallIds: Set<string>;
}
