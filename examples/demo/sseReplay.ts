import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The frames of a recorded `.sse` file, each with its trailing blank line. */
export async function readSSEFrames(file: URL): Promise<string[]> {
  const text = await readFile(file, 'utf8');
  return text
    .split(/\n\n+/)
    .map((frame) => frame.trim())
    .filter((frame) => frame !== '')
    .map((frame) => `${frame}\n\n`);
}

/** Starts an event stream on `response`. */
export function openEventStream(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
}

/**
 * Writes SSE frames with a pause between them, so the page sees them stream; stops when the
 * client went away (Stop in the page aborts the fetch).
 */
export async function writeFrames(response: ServerResponse, frames: readonly string[], pauseMs = 60): Promise<void> {
  for (const frame of frames) {
    if (response.destroyed) return;
    response.write(frame);
    await pause(pauseMs);
  }
  response.end();
}

/** Splits a sentence into word-sized deltas, spaces kept, for a streamed answer. */
export function toDeltas(text: string): string[] {
  return text.match(/\S+\s*/g) ?? [text];
}
