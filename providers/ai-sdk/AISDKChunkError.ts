import { AgentError } from '../../protocol/errors';

const EXCERPT_LIMIT = 200;

/**
 * A frame of an AI SDK UI message stream that cannot be read: not JSON, not a chunk of the
 * union (`field` names the offending path, `reason` what was wrong), or a chunk that names
 * a part the stream never started (a `text-delta` before its `text-start`, as the `ai`
 * package itself refuses). `chunkType` is the chunk's `type` when it had one, `frame` the
 * frame's text (cut at 200 characters in the message).
 *
 * @example
 * if (AISDKChunkError.isInstance(run.error)) console.warn(run.error.chunkType, run.error.field);
 */
export class AISDKChunkError extends AgentError {
  readonly chunkType: string | undefined;
  readonly field: string;
  readonly frame: string;

  constructor(chunkType: string | undefined, field: string, reason: string, frame: string) {
    const excerpt = frame.length > EXCERPT_LIMIT ? `${frame.slice(0, EXCERPT_LIMIT)}…` : frame;
    const what = chunkType === undefined ? 'chunk' : `"${chunkType}" chunk`;
    super(
      'invalid_ai_sdk_chunk',
      `Invalid ${what} from the AI SDK backend${field === '' ? '' : ` at ${field}`}: ${reason}; the frame was ${excerpt}`,
    );
    this.name = 'AISDKChunkError';
    this.chunkType = chunkType;
    this.field = field;
    this.frame = frame;
  }

  /** Whether `value` is an AISDKChunkError, from any copy of the package. */
  declare static isInstance: (value: unknown) => value is AISDKChunkError;
}
