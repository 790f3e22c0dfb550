import type { AgentCommand } from '../protocol/commandSchemas';
import type { AgentCommandError } from '../providers/AgentCommandError';
import { getAgentCommandKey } from './agentCommandKeys';

export type AgentCommandStatus = 'submitting' | 'succeeded' | 'failed';

/**
 * Where one command stands on the client: `submitting` until the runtime's answer stream
 * ended (`succeeded`) or sending it failed (`failed`, with the error). `succeeded` says the
 * runtime took the command, not that the entity finished: AgentState says that, from events.
 */
export interface AgentCommandState {
  command: AgentCommand;
  /** The command's action key (`getAgentCommandKey`). */
  key: string;
  status: AgentCommandStatus;
  error?: AgentCommandError;
  createdAt: number;
  updatedAt: number;
}

/**
 * The command states of one conversation, beside AgentState and never in it:
 * `commandStates` by command id, and the latest command id of each action key. Both
 * are replaced, never mutated, when a command changes, so a view can compare references.
 */
export class CommandBook {
  states: Readonly<Record<string, AgentCommandState>> = {};
  latestByAction: Readonly<Record<string, string>> = {};

  constructor(private readonly now: () => number) {}

  /** The latest command of an action, when there is one. */
  latest(actionKey: string): AgentCommandState | undefined {
    const commandId = this.latestByAction[actionKey];
    return commandId === undefined ? undefined : this.states[commandId];
  }

  /** A command (new, or sent again with its key) is submitting; it becomes its action's latest. */
  submitting(command: AgentCommand): void {
    const key = getAgentCommandKey(command);
    const time = this.now();
    const previous = this.states[command.commandId];
    this.states = {
      ...this.states,
      [command.commandId]: {
        command,
        key,
        status: 'submitting',
        createdAt: previous?.createdAt ?? time,
        updatedAt: time,
      },
    };
    this.latestByAction = { ...this.latestByAction, [key]: command.commandId };
  }

  settle(command: AgentCommand, error: AgentCommandError | undefined): void {
    const current = this.states[command.commandId];
    // Only a submitting command is settled, and a run with one submitting is never forgotten.
    /* v8 ignore if */
    if (current === undefined) return;
    const next: AgentCommandState = { ...current, status: error === undefined ? 'succeeded' : 'failed' };
    next.updatedAt = this.now();
    if (error === undefined) delete next.error;
    else next.error = error;
    this.states = { ...this.states, [command.commandId]: next };
  }

  /**
   * Commands a checkpoint says were submitting when it was saved: recorded as failed with
   * `error`, never sent again by themselves. The same intent sent again by the user reuses
   * their command id and idempotency key, so the runtime can drop a duplicate.
   */
  restoreUnanswered(commands: readonly AgentCommand[], error: AgentCommandError): void {
    if (commands.length === 0) return;
    const time = this.now();
    const states = { ...this.states };
    const latest = { ...this.latestByAction };
    for (const command of commands) {
      const key = getAgentCommandKey(command);
      states[command.commandId] = {
        command,
        key,
        status: 'failed',
        error,
        createdAt: command.timestamp,
        updatedAt: time,
      };
      latest[key] = command.commandId;
    }
    this.states = states;
    this.latestByAction = latest;
  }

  /** The commands still submitting, for a checkpoint. */
  submittingCommands(): AgentCommand[] {
    return Object.values(this.states)
      .filter((state) => state.status === 'submitting')
      .map((state) => state.command);
  }

  /** Whether any command of this run is still submitting. */
  hasSubmitting(runId: string): boolean {
    return Object.values(this.states).some((state) => state.command.runId === runId && state.status === 'submitting');
  }

  /** Drops every command state of a finished run, and its actions' latest ids. */
  forgetRun(runId: string): void {
    const states = Object.entries(this.states).filter(([, state]) => state.command.runId !== runId);
    if (states.length === Object.keys(this.states).length) return;
    this.states = Object.fromEntries(states);
    this.latestByAction = Object.fromEntries(
      Object.entries(this.latestByAction).filter(([, commandId]) => this.states[commandId] !== undefined),
    );
  }
}
