import type { UIMessageChunk } from '../../providers/ai-sdk/uiMessageChunkSchema';
import type { EventStreamWire } from '../EventStreamWire';
import type { EncodedEntry } from '../SessionFeed';
import type { UIMessageChunkEncoder } from './UIMessageChunkEncoder';

const DONE = 'data: [DONE]\n\n';

/** One chunk as a server-sent event: `data: <chunk JSON>`. */
export const uiMessageFrameOf = (chunk: UIMessageChunk): string => `data: ${JSON.stringify(chunk)}\n\n`;

const framesOf = (chunks: readonly UIMessageChunk[]): string => chunks.map(uiMessageFrameOf).join('');

/** How the AI SDK's UI message stream ends for a reason: an `error` chunk the client shows, then `[DONE]`. */
const endingWith = (errorText: string): string => uiMessageFrameOf({ type: 'error', errorText }) + DONE;

/**
 * The AI SDK's UI message stream as an event stream's wire: `start` with the assistant
 * message's id when it opens, the chunks `encoder` makes of each event, and the last run's
 * `finish` / `abort` / `error` then `data: [DONE]`. A stream that ends early (the reader is
 * no longer allowed, was too slow, or the log failed) ends as the protocol ends on a
 * failure: an `error` chunk saying why, then `[DONE]`; the client's resume reads it again.
 */
export class UIMessageStreamWire implements EventStreamWire {
  constructor(private readonly encoder: UIMessageChunkEncoder) {}

  opening(): string {
    return framesOf(this.encoder.start());
  }

  frameOf(entry: EncodedEntry): string {
    return framesOf(this.encoder.encode(entry.event));
  }

  ending(entry: EncodedEntry): string {
    return framesOf(this.encoder.end(entry.event)) + DONE;
  }

  refused(): string {
    return endingWith('Not allowed to read in this session');
  }

  dropped(): string {
    return endingWith('The stream was read too slowly and was ended: resume it');
  }

  failed(): string {
    return endingWith('The event log could not be read');
  }
}

/** A whole UI message stream that shows no event: `start`, `chunks`, `[DONE]`. */
export function uiMessageStreamOf(messageId: string, chunks: readonly UIMessageChunk[]): string {
  return framesOf([{ type: 'start', messageId }, ...chunks]) + DONE;
}
