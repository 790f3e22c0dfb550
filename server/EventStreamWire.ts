import type { EncodedEntry } from './SessionFeed';

/**
 * What one event stream writes, apart from how it reads: the host's own agent-event frames,
 * or another protocol's (the AI SDK's UI message stream). One per stream; it may keep state
 * (an encoder of one message), and does constant work per entry.
 */
export interface EventStreamWire {
  /** Written when the stream opens, before any entry. */
  opening(): string;
  /** The frames of an entry the stream shows, in log order. */
  frameOf(entry: EncodedEntry): string;
  /** Written after the frames of the entry that ends the stream (the last run's terminal). */
  ending(entry: EncodedEntry): string;
  /** The last frames when `authorize` no longer allows the reader. */
  refused(): string;
  /** The last frames when the reader was too slow; `cursor`: the last entry it was sent. */
  dropped(cursor: string | undefined): string;
  /** The last frames when the log failed or trimmed what the reader still had to read. */
  failed(): string;
}

const FORBIDDEN = `event: forbidden\ndata: ${JSON.stringify({ code: 'forbidden', message: 'Not allowed to read in this session' })}\n\n`;

/**
 * The host's own wire: one frame per event with `id:` = its cursor; `event: forbidden` and
 * `event: dropped` (with the cursor to resume after) as last frames; a log failure just ends
 * the stream, and the client's next request learns why.
 */
export const agentEventWire: EventStreamWire = {
  opening: () => '',
  frameOf: (entry) => entry.frame,
  ending: () => '',
  refused: () => FORBIDDEN,
  dropped: (cursor) => `event: dropped\ndata: ${JSON.stringify({ cursor: cursor ?? null })}\n\n`,
  failed: () => '',
};
