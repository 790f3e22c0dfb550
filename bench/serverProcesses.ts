// The child processes of bench/server.ts: a script forked under tsx with an IPC channel,
// asked things by message and answering by message, each answer with a `type`.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A forked bench script. */
export interface BenchProcess<Request, Message extends { type: string }> {
  /** The process's id, for reading its CPU time from /proc. */
  readonly pid: number | undefined;
  /** The next message of this type; rejects when the process exits first. */
  next<Type extends Message['type']>(type: Type): Promise<Extract<Message, { type: Type }>>;
  send(request: Request): void;
  /** Sends `request` (which makes it exit) and resolves once it exited. */
  close(request: Request): Promise<void>;
}

/**
 * Forks `bench/<script>` with `--expose-gc` and tsx; `serialization: 'advanced'` so typed
 * arrays and `undefined` cross the channel as they are.
 */
export function forkBenchScript<Request, Message extends { type: string }>(
  script: string,
  options: { env?: Record<string, string>; execArgv?: readonly string[] } = {},
): BenchProcess<Request, Message> {
  const child = fork(fileURLToPath(new URL(`./${script}`, import.meta.url)), [], {
    execArgv: ['--expose-gc', '--import', 'tsx', ...(options.execArgv ?? [])],
    env: { ...process.env, ...options.env },
    // Their output goes to stderr: the bench's stdout may be its JSON report.
    stdio: ['ignore', 2, 2, 'ipc'],
    serialization: 'advanced',
  });
  // A bench that dies without closing its children must not leave them running.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    pid: child.pid,
    next(type) {
      return new Promise((resolve, reject) => {
        const onMessage = (message: Message) => {
          if (message.type !== type) return;
          child.off('message', onMessage);
          resolve(message as Extract<Message, { type: typeof type }>);
        };
        child.on('message', onMessage);
        exited.then((code) => {
          child.off('message', onMessage);
          reject(new Error(`${script} exited (${code}) before its "${type}" message`));
        });
      });
    },
    send(request) {
      child.send(request as object);
    },
    async close(request) {
      process.removeListener('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) child.send(request as object);
      await exited;
    },
  };
}
