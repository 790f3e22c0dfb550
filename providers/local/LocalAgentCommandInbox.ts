import type { AgentCommand } from '../../protocol/commandSchemas';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { AgentCommandError } from '../AgentCommandError';

/** A command handed to a local run, which the run takes and then carries out or refuses. */
export interface LocalAgentCommandDelivery {
  readonly command: AgentCommand;
  /** The run will carry the command out: its sender's `executeCommand` completes. */
  accept(): void;
  /** The command does not apply (the message says why): its sender's `executeCommand` fails `invalid_command`. */
  refuse(reason: string): void;
}

interface QueuedDelivery extends LocalAgentCommandDelivery {
  settled: boolean;
}

const ENDED = 'the run ended before it took the command';

function abortError(signal: AbortSignal): AgentTransportError {
  return new AgentTransportError('aborted', 'The local run was aborted', { cause: signal.reason });
}

/**
 * The commands sent to one live local run, in the order they came. `executeCommand` hands
 * each one in and completes once the run has taken it; the run's own stream emits what the
 * command does, so the run's events keep one order and one sequence. A command resent with
 * the same idempotency key is the same command: it is taken once.
 *
 * @example
 * for (let delivery = inbox.take(); delivery; delivery = inbox.take()) {
 *   if (delivery.command.type === 'run.cancel') delivery.accept();
 *   else delivery.refuse('this runtime only cancels');
 * }
 */
export class LocalAgentCommandInbox {
  private readonly queue: (QueuedDelivery | undefined)[] = [];
  private head = 0;
  private readonly byIdempotencyKey = new Map<string, Promise<void>>();
  private wake: (() => void) | undefined;
  private closed = false;

  constructor(
    readonly sessionId: string,
    readonly runId: string,
    private readonly onClose: () => void = () => {},
  ) {}

  /** Whether the run has ended: it takes no more commands. */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Hands a command to the run. Resolves when the run takes it; rejects with an
   * `AgentCommandError` when the run refuses it, ends before taking it, or `signal` aborts first.
   */
  deliver(command: AgentCommand, signal?: AbortSignal): Promise<void> {
    const known = this.byIdempotencyKey.get(command.idempotencyKey);
    if (known !== undefined) return known;
    if (this.closed) return Promise.reject(this.endedError(command));
    // A command its sender gave up on is forgotten with its key: sent again, it is delivered anew.
    let withdrawn = false;
    const delivered = new Promise<void>((resolve, reject) => {
      const withdraw = () => {
        if (delivery.settled) return;
        delivery.settled = true;
        withdrawn = true;
        this.byIdempotencyKey.delete(command.idempotencyKey);
        // Left in the queue as a hole, so the run never takes a command its sender gave up.
        const index = this.queue.indexOf(delivery, this.head);
        if (index >= 0) this.queue[index] = undefined;
        reject(
          new AgentCommandError('interrupted', `${this.describe(command)} was aborted before the run took it`, {
            retryable: true,
            cause: signal?.reason,
          }),
        );
      };
      const settle = (error?: AgentCommandError) => {
        if (delivery.settled) return;
        delivery.settled = true;
        signal?.removeEventListener('abort', withdraw);
        if (error === undefined) resolve();
        else reject(error);
      };
      const delivery: QueuedDelivery = {
        command,
        settled: false,
        accept: () => settle(),
        refuse: (reason) => settle(new AgentCommandError('invalid_command', `${this.describe(command)}: ${reason}`)),
      };
      if (signal?.aborted) {
        withdraw();
        return;
      }
      signal?.addEventListener('abort', withdraw, { once: true });
      this.queue.push(delivery);
      this.wake?.();
    });
    if (!withdrawn) this.byIdempotencyKey.set(command.idempotencyKey, delivered);
    return delivered;
  }

  /** The oldest command not yet taken, if any. */
  take(): LocalAgentCommandDelivery | undefined {
    while (this.head < this.queue.length) {
      const delivery = this.queue[this.head];
      this.queue[this.head] = undefined;
      this.head += 1;
      if (delivery !== undefined && !delivery.settled) return delivery;
    }
    // Drained: start over rather than let the array grow with holes.
    this.queue.length = 0;
    this.head = 0;
    return undefined;
  }

  /**
   * Resolves when a command is there to take, or after `timeoutMs`; rejects as an aborted
   * transport would when `signal` aborts.
   */
  waitForDelivery(signal: AbortSignal, timeoutMs?: number): Promise<void> {
    if (this.hasDelivery()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', abort);
        this.wake = undefined;
      };
      const abort = () => {
        done();
        reject(abortError(signal));
      };
      if (signal.aborted) {
        reject(abortError(signal));
        return;
      }
      signal.addEventListener('abort', abort, { once: true });
      this.wake = () => {
        done();
        resolve();
      };
      if (timeoutMs !== undefined) timer = setTimeout(this.wake, timeoutMs);
    });
  }

  /** The run has ended: commands not taken yet, and any sent from now on, are refused. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (let delivery = this.take(); delivery !== undefined; delivery = this.take()) {
      delivery.refuse(ENDED);
    }
    this.onClose();
  }

  private hasDelivery(): boolean {
    for (let index = this.head; index < this.queue.length; index += 1) {
      const delivery = this.queue[index];
      if (delivery !== undefined && !delivery.settled) return true;
    }
    return false;
  }

  private describe(command: AgentCommand): string {
    return `${command.type} (command ${command.commandId}) for local run "${this.runId}"`;
  }

  private endedError(command: AgentCommand): AgentCommandError {
    return new AgentCommandError('invalid_command', `${this.describe(command)}: ${ENDED}`);
  }
}
