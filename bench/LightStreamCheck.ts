// What a light reader of bench/server.ts checks of an event stream, on its bytes: the frames
// are found with `Buffer.indexOf` (a frame's lines end in one newline, the frame in two; an
// event's JSON holds none), each `id:` cursor must be above the one before, each event's
// `timestamp` is read where it stands for its latency, and only the run's own events
// (`run.started`, the terminal one) are parsed.
import type { AgentEvent } from '../protocol/eventSchemas';

const RUN_TERMINALS: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled']);
const ID_FIELD = Buffer.from('id: ');
const DATA_FIELD = Buffer.from('data: ');
const TYPE_FIELD = Buffer.from('"type":"');
const RUN_TYPE = Buffer.from('run.');
const TIMESTAMP_FIELD = Buffer.from('"timestamp":');
const NEWLINE = 0x0a;
const DASH = 0x2d;
const POINT = 0x2e;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/** Divisors of a fraction's digits, by their count: a table, as `10 ** n` calls `pow` each time. */
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, exponent) => 10 ** exponent);

/** Whether `buffer` holds `field` at `offset`; a loop, as `Buffer.compare` costs more than these few bytes. */
function fieldAt(buffer: Buffer, field: Buffer, offset: number): boolean {
  if (offset < 0 || offset + field.length > buffer.length) return false;
  for (let index = 0; index < field.length; index += 1) {
    if (buffer[offset + index] !== field[index]) return false;
  }
  return true;
}

/**
 * One stream's frames, checked as they arrive: `feed` each read's bytes. The run's first event
 * must be its `run.started`, every event of the run given (`runId`), the cursors increasing.
 */
export class LightStreamCheck {
  /** Events of the run received. */
  events = 0;
  /** Receive time minus the event's timestamp, in ms, one per event in order. */
  latencies: Float64Array;
  firstEventAt = Number.NaN;
  terminalEventAt = Number.NaN;
  terminalReceivedAt = Number.NaN;
  /** The run's terminal event arrived. */
  ended = false;
  readonly problems: string[] = [];
  // The last cursor as two numbers: a stream id `<ms>-<seq>` (Redis), or one integer (the memory log).
  private lastMajor = -1;
  private lastMinor = -1;
  /** Whether the last cursor had two parts: made a string only when asked for. */
  private lastCursorDashed = false;
  // Where the fields were in the last frame's data: the frames of a run are alike, so nearly always there again.
  private typeHint = 0;
  private timestampHint = 0;
  /** The bytes of a frame the last read ended in the middle of. */
  private partial: Buffer | undefined;
  /** The end of the digits `digitsAt` last read. */
  private digitsEnd = 0;

  constructor(
    private readonly runId: string,
    expectedEvents: number,
  ) {
    this.latencies = new Float64Array(expectedEvents);
  }

  /** The last event's cursor: where the stream resumes. */
  get lastCursor(): string | undefined {
    if (this.events === 0) return undefined;
    // Canonical cursors have no leading zeros: their numbers give them back.
    return this.lastCursorDashed ? `${this.lastMajor}-${this.lastMinor}` : String(this.lastMajor);
  }

  /** A new stream (a resumed one) starts with a whole frame. */
  restart(): void {
    this.partial = undefined;
  }

  /**
   * Checks a read's bytes: the frame the last read cut in two is put together, the rest read
   * where it lies. Nothing of `chunk` is kept past the call (its buffer may be reused).
   */
  feed(chunk: Buffer, receivedAt: number): void {
    const partial = this.partial;
    if (partial === undefined) {
      this.frames(chunk, 0, receivedAt);
      return;
    }
    // `partial` holds no frame's end: the chunk's first one ends it (its second newline may be the chunk's first byte).
    let end = 1;
    if (!(partial[partial.length - 1] === NEWLINE && chunk[0] === NEWLINE)) {
      const found = chunk.indexOf('\n\n', 0, 'latin1');
      if (found === -1) {
        this.partial = Buffer.concat([partial, chunk]);
        return;
      }
      end = found + 2;
    }
    this.frames(Buffer.concat([partial, chunk.subarray(0, end)]), 0, receivedAt);
    this.frames(chunk, end, receivedAt);
  }

  /** Checks the whole frames of `buffer` from `start` on; keeps the bytes of a last one cut short. */
  private frames(buffer: Buffer, start: number, receivedAt: number): void {
    let frameStart = start;
    for (;;) {
      // Comments (keep-alive) and named events (`event: dropped`, read by the stream's end) are not the run's.
      const isEvent = fieldAt(buffer, ID_FIELD, frameStart);
      let lineEnd = buffer.indexOf(NEWLINE, frameStart);
      // An event's frame: its `id:` line, then its data line.
      if (isEvent && lineEnd !== -1) lineEnd = buffer.indexOf(NEWLINE, lineEnd + 1);
      while (lineEnd !== -1 && lineEnd + 1 < buffer.length && buffer[lineEnd + 1] !== NEWLINE) {
        lineEnd = buffer.indexOf(NEWLINE, lineEnd + 1);
      }
      if (lineEnd === -1 || lineEnd + 1 === buffer.length) break;
      if (isEvent) this.event(buffer, frameStart, lineEnd, receivedAt);
      frameStart = lineEnd + 2;
    }
    // A copy: the read's buffer may be reused.
    this.partial = frameStart < buffer.length ? Buffer.from(buffer.subarray(frameStart)) : undefined;
  }

  /** The event frame from `start`, its `id:` line, to `end`, its data line's newline. */
  private event(buffer: Buffer, start: number, end: number, receivedAt: number): void {
    const cursorStart = start + ID_FIELD.length;
    const major = this.digitsAt(buffer, cursorStart);
    const dashed = buffer[this.digitsEnd] === DASH;
    const minor = dashed ? this.digitsAt(buffer, this.digitsEnd + 1) : 0;
    const cursorEnd = this.digitsEnd;
    if (major < this.lastMajor || (major === this.lastMajor && minor <= this.lastMinor)) {
      this.problems.push(`cursor ${buffer.toString('latin1', cursorStart, cursorEnd)} after ${this.lastCursor}`);
    }
    this.lastMajor = major;
    this.lastMinor = minor;
    this.lastCursorDashed = dashed;
    if (!fieldAt(buffer, DATA_FIELD, cursorEnd + 1)) this.problems.push(`no data line after cursor ${this.lastCursor}`);
    const data = cursorEnd + 1 + DATA_FIELD.length;
    const timestampAt = this.find(buffer, TIMESTAMP_FIELD, data, end, this.timestampHint);
    const typeAt = this.find(buffer, TYPE_FIELD, data, end, this.typeHint);
    if (timestampAt === -1 || typeAt === -1) {
      this.problems.push(`no timestamp or type in the event of cursor ${this.lastCursor}`);
      return;
    }
    this.timestampHint = timestampAt - data;
    this.typeHint = typeAt - data;
    let eventAt = this.digitsAt(buffer, timestampAt + TIMESTAMP_FIELD.length);
    // Timestamps carry fractions of a millisecond.
    if (buffer[this.digitsEnd] === POINT) {
      const fractionStart = this.digitsEnd + 1;
      const fraction = this.digitsAt(buffer, fractionStart);
      eventAt += fraction / (POWERS_OF_TEN[this.digitsEnd - fractionStart] as number);
    }
    if (this.events === this.latencies.length) {
      const grown = new Float64Array(this.latencies.length * 2 + 16);
      grown.set(this.latencies);
      this.latencies = grown;
    }
    this.latencies[this.events] = receivedAt - eventAt;
    this.events += 1;
    if (this.events === 1) this.firstEventAt = eventAt;
    if (fieldAt(buffer, RUN_TYPE, typeAt + TYPE_FIELD.length)) {
      this.runEvent(JSON.parse(buffer.toString('utf8', data, end)) as AgentEvent, receivedAt);
    } else if (this.events === 1) {
      this.problems.push('the first event is not run.started');
    }
  }

  /** One of the run's own events: its run and place are checked, the terminal one ends the stream. */
  private runEvent(event: AgentEvent, receivedAt: number): void {
    if (event.runId !== this.runId) this.problems.push(`an event of run ${event.runId}`);
    if ((event.type === 'run.started') !== (this.events === 1)) {
      this.problems.push(`${event.type} as event ${this.events}`);
    }
    if (RUN_TERMINALS.has(event.type)) {
      this.ended = true;
      this.terminalEventAt = event.timestamp;
      this.terminalReceivedAt = receivedAt;
    }
  }

  /** Where `field` is in the data from `data` to `end`, or -1: first where it was in the last frame, else searched. */
  private find(buffer: Buffer, field: Buffer, data: number, end: number, hint: number): number {
    if (fieldAt(buffer, field, data + hint)) return data + hint;
    const at = buffer.indexOf(field, data);
    return at === -1 || at + field.length > end ? -1 : at;
  }

  /** Reads the digits from `start` as a number; `digitsEnd` is then the first byte that is not one. */
  private digitsAt(buffer: Buffer, start: number): number {
    let value = 0;
    let index = start;
    let byte = buffer[index] ?? 0;
    while (byte >= DIGIT_0 && byte <= DIGIT_9) {
      value = value * 10 + (byte - DIGIT_0);
      index += 1;
      byte = buffer[index] ?? 0;
    }
    this.digitsEnd = index;
    return value;
  }
}
