// An HTTP/1.1 GET of an event stream over a plain TCP connection, for the light readers of
// bench/server.ts: the request written and the response's head and chunked body read by hand,
// into one buffer per connection that every read reuses (net's `onread`). node:http (or fetch)
// allocates a buffer for every read, and under many readers that allocation and its collection
// cost more than the reading itself.
import { connect, type Socket } from 'node:net';

/** An open stream: its response was `200`, its body comes to `onBody`. */
export interface RawEventStream {
  /** Resolves when the body ended (the host's last chunk), `onBody` said `false`, or the connection closed or broke. */
  ended: Promise<void>;
  /** Reads of the connection, the response's head's included. */
  readonly reads: number;
}

export interface RawEventStreamOptions {
  /** The host's origin, `http://127.0.0.1:<port>`. */
  url: string;
  /** The path and query to GET. */
  path: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Bytes of the connection's reads. Default 64 KiB. */
  readBufferBytes?: number;
  /**
   * The body's bytes, as each read brings them, with the read's time; `false` closes the
   * connection (the reader has what it wanted). The bytes live in the reused buffer: copy
   * what must outlive the call.
   */
  onBody(bytes: Buffer, receivedAt: number): boolean;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CARRIAGE_RETURN = 0x0d;
const NEWLINE = 0x0a;
const SEMICOLON = 0x3b;
const now = () => performance.timeOrigin + performance.now();

/** A hexadecimal digit's value, or -1. */
function hexValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x61 + 10;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x41 + 10;
  return -1;
}

/**
 * The chunked transfer coding (RFC 9112, section 7.1) read a byte range at a time: the size
 * line (extensions skipped), the data given out as it comes, the CRLF after it; size 0 is the end.
 */
class ChunkedBody {
  private state: 'size' | 'extension' | 'data' | 'data-end' | 'ended' = 'size';
  private size = 0;
  private remaining = 0;

  get ended(): boolean {
    return this.state === 'ended';
  }

  /** Reads `bytes` from `start` to `end`, giving out the data's ranges; stops where `onData` says `false`. */
  read(bytes: Buffer, start: number, end: number, onData: (from: number, to: number) => boolean): boolean {
    let index = start;
    while (index < end && this.state !== 'ended') {
      if (this.state === 'data') {
        const to = Math.min(end, index + this.remaining);
        if (!onData(index, to)) return false;
        this.remaining -= to - index;
        index = to;
        if (this.remaining === 0) this.state = 'data-end';
        continue;
      }
      const byte = bytes[index] as number;
      index += 1;
      if (this.state === 'data-end') {
        // The CRLF after the data.
        if (byte === NEWLINE) this.state = 'size';
        continue;
      }
      if (byte === NEWLINE) {
        this.state = this.size === 0 ? 'ended' : 'data';
        this.remaining = this.size;
        this.size = 0;
        continue;
      }
      if (this.state === 'extension' || byte === CARRIAGE_RETURN) continue;
      if (byte === SEMICOLON) {
        this.state = 'extension';
        continue;
      }
      const digit = hexValue(byte);
      if (digit === -1) throw new Error(`A chunk size has the byte ${byte}`);
      this.size = this.size * 16 + digit;
    }
    return true;
  }
}

/**
 * GETs `options.path` from `options.url` (plain http, HTTP/1.1, `Connection: close`); resolves
 * once the response's head arrived and was `200` with a chunked body, then gives the body to
 * `onBody` read by read. Any other answer rejects, with the status and what came of the body.
 */
export function openRawEventStream(options: RawEventStreamOptions): Promise<RawEventStream> {
  const origin = new URL(options.url);
  const buffer = Buffer.allocUnsafe(options.readBufferBytes ?? 65_536);
  const body = new ChunkedBody();
  let head: Buffer | undefined = Buffer.alloc(0);
  let reads = 0;
  let socket: Socket;
  let endStream = () => {};
  const ended = new Promise<void>((resolve) => {
    endStream = resolve;
  });

  return new Promise((resolve, reject) => {
    // After the head, only the end counts: the promise is settled.
    const fail = (error: unknown) => {
      reject(error);
      endStream();
    };
    const stream: RawEventStream = {
      ended,
      get reads() {
        return reads;
      },
    };

    /** Reads the response's head from the first reads; the bytes after it are the body's first. */
    function readHead(read: Buffer): number | undefined {
      head = Buffer.concat([head as Buffer, read]);
      const headEnd = head.indexOf(HEAD_END);
      if (headEnd === -1) return undefined;
      const lines = head.toString('latin1', 0, headEnd).split('\r\n');
      const status = Number(lines[0]?.split(' ')[1]);
      const chunked = lines.some((line) => /^transfer-encoding:\s*chunked\s*$/i.test(line));
      if (status !== 200 || !chunked) {
        const text = head.toString('utf8', headEnd + HEAD_END.length);
        fail(new Error(`GET ${options.path} answered ${status}${chunked ? '' : ' (not chunked)'}: ${text}`));
        socket.destroy();
        return undefined;
      }
      const bodyStart = headEnd + HEAD_END.length - (head.length - read.length);
      head = undefined;
      resolve(stream);
      return bodyStart;
    }

    socket = connect({
      host: origin.hostname,
      port: Number(origin.port),
      onread: {
        buffer,
        callback: (bytesRead: number, readBuffer: Uint8Array) => {
          const read = readBuffer as Buffer;
          reads += 1;
          let start = 0;
          if (head !== undefined) {
            const bodyStart = readHead(read.subarray(0, bytesRead));
            if (bodyStart === undefined) return true;
            start = bodyStart;
          }
          const receivedAt = now();
          let more: boolean;
          try {
            more = body.read(read, start, bytesRead, (from, to) => options.onBody(read.subarray(from, to), receivedAt));
          } catch (error) {
            socket.destroy(error as Error);
            return false;
          }
          if (!more) {
            socket.destroy();
            return false;
          }
          if (body.ended) socket.end();
          return true;
        },
      },
    });
    const headers = Object.entries(options.headers ?? {})
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(
      `GET ${options.path} HTTP/1.1\r\nHost: ${origin.host}\r\nAccept: text/event-stream\r\nConnection: close\r\n${headers}\r\n`,
    );
    // A broken connection ends the stream (or fails its opening): `close` follows.
    socket.on('error', fail);
    const abort = () => socket.destroy();
    socket.once('close', () => {
      options.signal?.removeEventListener('abort', abort);
      fail(new Error(`The connection to ${options.url} closed before the response's head`));
    });
    options.signal?.addEventListener('abort', abort, { once: true });
    if (options.signal?.aborted) abort();
  });
}
