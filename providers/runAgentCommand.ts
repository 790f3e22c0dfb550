import { AGENT_EVENT_ADMITTED, type AgentEventAdmission } from '../protocol/admittedEvents';
import type { AgentCommand } from '../protocol/commandSchemas';
import type { AgentEvent } from '../protocol/eventSchemas';
import { parseAgentCommand } from '../protocol/parseAgentEvent';
import { isAbortError } from '../transports/AgentTransportError';
import { AgentCommandError } from './AgentCommandError';
import type { AgentProvider } from './AgentProvider';
import { EventGate } from './EventGate';
import { toAgentErrorInfo } from './toAgentErrorInfo';

export interface RunAgentCommandOptions {
  // biome-ignore lint/suspicious/noExplicitAny: a provider of any input, request, chunk and context
  provider: AgentProvider<any, any, any, any>;
  command: AgentCommand;
  /** Aborts the command: it fails `interrupted`. The command gets its own controller either way. */
  signal?: AbortSignal;
  /** The run's last sequence when the command was created: every returned event must come after it. */
  initialSequence: number;
  /** Receives every validated event, with the runner's admission token; what it throws is rethrown unchanged. */
  onEvent: (event: AgentEvent, admission: AgentEventAdmission) => void;
  now?: () => number;
}

/** Marks an error thrown by `onEvent`, so it is rethrown as it is. */
class ConsumerFailure {
  constructor(readonly error: unknown) {}
}

function interrupted(signal: AbortSignal): AgentCommandError {
  return new AgentCommandError('interrupted', 'The command was interrupted before the provider finished it', {
    retryable: true,
    cause: signal.reason,
  });
}

/** Checks the command and the provider's support for it before anything is called. */
function checkCommand(provider: RunAgentCommandOptions['provider'], command: unknown): AgentCommand {
  const parsed = parseAgentCommand(command);
  if (!parsed.success) throw new AgentCommandError('invalid_command', `Invalid command: ${parsed.error.message}`);
  const { type } = parsed.value;
  if (!(provider.capabilities.commands ?? []).includes(type)) {
    throw new AgentCommandError(
      'unsupported_capability',
      `Provider "${provider.id}" does not declare the ${type} command in capabilities.commands`,
    );
  }
  if (typeof provider.executeCommand !== 'function') {
    throw new AgentCommandError(
      'unsupported_capability',
      `Provider "${provider.id}" declares ${type} but has no executeCommand`,
    );
  }
  return parsed.value;
}

/**
 * Sends one command to the runtime through `provider.executeCommand` and delivers the
 * events it answers with, each checked as a run's own events are (valid, of the command's
 * session and run, declared, after `initialSequence` and in order). The command is checked
 * first, and the provider's support for it; nothing is called when either fails.
 * Failures are an `AgentCommandError`: `invalid_command`, `unsupported_capability`,
 * `provider_error` (retryable as the provider's `classifyError` says), `protocol_error`,
 * `interrupted` (the signal aborted). What `onEvent` throws is rethrown unchanged.
 *
 * @example
 * const command = createAgentCommandFactory({ sessionId, runId }).create('run.cancel', { reason: 'user' });
 * await runAgentCommand({
 *   provider,
 *   command,
 *   initialSequence: store.getSnapshot().lastSequenceByRun[runId] ?? 0,
 *   onEvent: store.dispatch,
 * });
 */
export async function runAgentCommand(options: RunAgentCommandOptions): Promise<void> {
  const { provider, onEvent } = options;
  const command = checkCommand(provider, options.command);
  const controller = new AbortController();
  const abortFromCaller = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) throw interrupted(options.signal);
  options.signal?.addEventListener('abort', abortFromCaller, { once: true });
  const gate = new EventGate(provider, command.sessionId, command.runId, options.initialSequence, (reason, event) => {
    throw new AgentCommandError('protocol_error', `Provider "${provider.id}" answered ${command.type}: ${reason}`, {
      cause: event,
    });
  });
  const commandOptions = { signal: controller.signal, initialSequence: options.initialSequence };
  try {
    const stream = (provider.executeCommand as NonNullable<typeof provider.executeCommand>)(
      command,
      options.now === undefined ? commandOptions : { ...commandOptions, now: options.now },
    );
    for await (const value of stream) {
      if (controller.signal.aborted) throw interrupted(controller.signal);
      const event = gate.admit(value);
      try {
        onEvent(event, AGENT_EVENT_ADMITTED);
      } catch (error) {
        throw new ConsumerFailure(error);
      }
    }
    if (controller.signal.aborted) throw interrupted(controller.signal);
  } catch (error) {
    if (error instanceof ConsumerFailure) throw error.error;
    if (AgentCommandError.isInstance(error)) throw error;
    if (controller.signal.aborted || isAbortError(error)) throw interrupted(controller.signal);
    let retryable = false;
    try {
      retryable = provider.classifyError?.(error, undefined)?.retryable === true;
    } catch {
      // A classifier that throws classifies nothing.
    }
    const message = `Provider "${provider.id}" failed to execute ${command.type}: ${toAgentErrorInfo(error).message}`;
    throw new AgentCommandError('provider_error', message, { retryable, cause: error });
  } finally {
    options.signal?.removeEventListener('abort', abortFromCaller);
    controller.abort();
  }
}
