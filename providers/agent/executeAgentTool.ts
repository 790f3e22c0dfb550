import type { AgentErrorInfo } from '../../protocol/eventSchemas';
import { checkPlainJson } from '../../protocol/plainJson';
import { toAgentErrorInfo } from '../toAgentErrorInfo';
import type { AgentTool } from './defineAgentTool';

/** How one execution ended: a result (plain JSON, or none), an error, or the run's abort. */
export type AgentToolOutcome =
  | { status: 'completed'; result?: unknown }
  | { status: 'failed'; error: AgentErrorInfo }
  | { status: 'cancelled' };

export interface ExecuteAgentToolOptions {
  /** The run's signal: aborting it aborts the execution, which ends `cancelled`. */
  signal: AbortSignal;
  runId: string;
  toolCallId: string;
}

/** A result as an event can carry it: as it is when plain JSON, else through JSON (dates as strings, `undefined` fields gone). */
function toPlainResult(name: string, value: unknown): AgentToolOutcome {
  if (value === undefined) return { status: 'completed' };
  if (checkPlainJson(value) === undefined) return { status: 'completed', result: value };
  let converted: unknown;
  try {
    const text = JSON.stringify(value);
    converted = text === undefined ? undefined : JSON.parse(text);
  } catch (error) {
    converted = error;
  }
  const failure = converted instanceof Error ? { path: '', reason: converted.message } : checkPlainJson(converted);
  if (failure === undefined)
    return converted === undefined ? { status: 'completed' } : { status: 'completed', result: converted };
  const where = failure.path === '' ? 'it' : failure.path;
  return {
    status: 'failed',
    error: {
      message: `${name} returned a result that is not JSON: ${where} ${failure.reason}`,
      code: 'invalid_result',
    },
  };
}

/**
 * Runs a tool's `execute` with an input already validated. Its signal is aborted when the
 * run's is (the outcome is then `cancelled`) and when `timeoutMs` passes (the call fails with
 * code `timeout`); either way the outcome comes at once, without waiting for an `execute`
 * that ignores its signal. What `execute` throws fails the call, with the error's `code`
 * (else `tool_error`) and message; a result that is not JSON fails it with `invalid_result`.
 * Never rejects.
 *
 * @example
 * const outcome = await executeAgentTool(weather, { city: 'Paris' }, { signal, runId, toolCallId: 'call_1' });
 * // { status: 'completed', result: { celsius: 14 } }
 */
export function executeAgentTool(
  tool: AgentTool,
  input: unknown,
  options: ExecuteAgentToolOptions,
): Promise<AgentToolOutcome> {
  const { signal, runId, toolCallId } = options;
  if (signal.aborted || tool.execute === undefined) return Promise.resolve({ status: 'cancelled' });
  const controller = new AbortController();
  return new Promise<AgentToolOutcome>((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const settle = (outcome: AgentToolOutcome) => {
      if (timer !== undefined) clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    const onAbort = () => {
      controller.abort(signal.reason);
      settle({ status: 'cancelled' });
    };
    signal.addEventListener('abort', onAbort, { once: true });
    if (tool.timeoutMs !== undefined) {
      const { timeoutMs } = tool;
      timer = setTimeout(() => {
        const message = `${tool.name} did not finish within ${timeoutMs} ms`;
        controller.abort(new DOMException(message, 'TimeoutError'));
        settle({ status: 'failed', error: { message, code: 'timeout' } });
      }, timeoutMs);
    }
    let running: PromiseLike<unknown>;
    try {
      running = Promise.resolve(tool.execute?.(input, { signal: controller.signal, runId, toolCallId }));
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(
      (value) => settle(toPlainResult(tool.name, value)),
      (error: unknown) => {
        const info = toAgentErrorInfo(error);
        settle({ status: 'failed', error: info.code === undefined ? { ...info, code: 'tool_error' } : info });
      },
    );
  });
}
