import type { AgentTransport, AgentTransportKind } from './AgentTransport';
import { AgentTransportError } from './AgentTransportError';

/** One recorded chunk and when it arrived, in milliseconds from the start of the stream. */
export interface FixtureFrame<Chunk> {
  at: number;
  chunk: Chunk;
}

/** Parses a recording: one JSON `{ at, chunk }` per line, blank lines ignored. */
export function parseFixtureRecording<Chunk>(recording: string): FixtureFrame<Chunk>[] {
  const frames: FixtureFrame<Chunk>[] = [];
  const lines = recording.split(/\r?\n/);
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch (error) {
      throw new AgentTransportError('invalid_frame', `Recording line ${index + 1} is not JSON`, { cause: error });
    }
    const at = (frame as { at?: unknown }).at;
    if (
      typeof frame !== 'object' ||
      frame === null ||
      typeof at !== 'number' ||
      !Number.isFinite(at) ||
      !('chunk' in frame)
    ) {
      throw new AgentTransportError('invalid_frame', `Recording line ${index + 1} is not a { at, chunk } frame`);
    }
    frames.push(frame as FixtureFrame<Chunk>);
  }
  return frames;
}

function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AgentTransportError('aborted', 'The replay was aborted', { cause: signal.reason }));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Replays a recording (JSONL of `{ at, chunk }`, or the frames) with its timing, for demos
 * and tests. `speed` 2 plays twice as fast; 0 plays as fast as possible. The request is
 * ignored. `kind` lets a recording stand in for the transport it was recorded from.
 *
 * @example
 * const transport = createFixtureTransport(readFileSync('run.jsonl', 'utf8'), { speed: 0, kind: 'sse' });
 */
export function createFixtureTransport<Chunk>(
  recording: string | readonly FixtureFrame<Chunk>[],
  options: { speed?: number; kind?: AgentTransportKind } = {},
): AgentTransport<unknown, Chunk> {
  const frames = typeof recording === 'string' ? parseFixtureRecording<Chunk>(recording) : recording;
  const speed = options.speed ?? 1;
  if (!(speed >= 0)) throw new RangeError(`speed must be 0 or more, got ${speed}`);
  return {
    kind: options.kind ?? 'fixture',
    async *open(_request, signal) {
      let previous = 0;
      for (const frame of frames) {
        if (signal.aborted)
          throw new AgentTransportError('aborted', 'The replay was aborted', { cause: signal.reason });
        const gap = frame.at - previous;
        previous = frame.at;
        if (speed > 0 && gap > 0) await wait(gap / speed, signal);
        yield frame.chunk;
      }
    },
  };
}

export interface RecordingTransport<Request, Chunk> extends AgentTransport<Request, Chunk> {
  /** Everything yielded so far, as frames. */
  readonly frames: readonly FixtureFrame<Chunk>[];
  /** Everything yielded so far, as the JSONL that `createFixtureTransport` replays. */
  toJSONL(): string;
}

/**
 * Wraps a transport and records every chunk it yields with its arrival time, so a real
 * stream can be saved once and replayed by `createFixtureTransport`.
 *
 * @example
 * const recorder = recordTransport(createSSETransport({ url }));
 * await runAgentProvider({ provider: { ...provider, transport: recorder }, ... });
 * writeFileSync('run.jsonl', recorder.toJSONL());
 */
export function recordTransport<Request, Chunk>(
  transport: AgentTransport<Request, Chunk>,
  options: { now?: () => number } = {},
): RecordingTransport<Request, Chunk> {
  const now = options.now ?? (() => performance.now());
  const frames: FixtureFrame<Chunk>[] = [];
  const record = async function* (stream: AsyncIterable<Chunk>) {
    const start = now();
    for await (const chunk of stream) {
      frames.push({ at: Math.round(now() - start), chunk });
      yield chunk;
    }
  };
  const recording: RecordingTransport<Request, Chunk> = {
    kind: transport.kind,
    frames,
    open: (request, signal) => record(transport.open(request, signal)),
    toJSONL: () => frames.map((frame) => JSON.stringify(frame)).join('\n') + (frames.length > 0 ? '\n' : ''),
  };
  if (transport.getCursor) recording.getCursor = transport.getCursor.bind(transport);
  if (transport.resume) {
    const resume = transport.resume.bind(transport);
    recording.resume = (request, cursor, signal) => record(resume(request, cursor, signal));
  }
  return recording;
}
