import type { AgentCheckpoint } from './AgentCheckpoint';
import { AgentCheckpointError, describeCheckpointKey } from './AgentCheckpointError';
import { DEFAULT_MAX_CHECKPOINT_SIZE } from './checkpointLimits';

/**
 * Values read back from stored text no longer than `DEFAULT_MAX_CHECKPOINT_SIZE`: their JSON
 * size is bounded by the text's, so `parseAgentCheckpoint` need not measure them again.
 */
const sizeCheckedValues = new WeakSet<object>();

/** Whether `value` was read from stored text within the size limit (by `parseAgentCheckpointJson`). */
export function isSizeCheckedCheckpointValue(value: unknown): boolean {
  return typeof value === 'object' && value !== null && sizeCheckedValues.has(value);
}

/**
 * The session id a checkpoint given to `save` is kept under: its own `sessionId`.
 *
 * @throws AgentCheckpointError `invalid_checkpoint` when it is not an object with a non-empty
 * string `sessionId` (a caller of the older `save(sessionId, checkpoint)` gets this, not a
 * checkpoint saved under `undefined`).
 */
export function checkpointSessionId(checkpoint: unknown): string {
  const sessionId =
    typeof checkpoint === 'object' && checkpoint !== null
      ? (checkpoint as { sessionId?: unknown }).sessionId
      : undefined;
  if (typeof sessionId === 'string' && sessionId !== '') return sessionId;
  throw new AgentCheckpointError(
    'invalid_checkpoint',
    typeof checkpoint === 'object' && checkpoint !== null
      ? 'Cannot save a checkpoint without a sessionId (a non-empty string): save(checkpoint) keeps it under its own sessionId'
      : `Cannot save ${checkpoint === null ? 'null' : typeof checkpoint} as a checkpoint: save takes the checkpoint only, and keeps it under its sessionId`,
    { path: 'sessionId' },
  );
}

/**
 * The session id a checkpoint is kept under, and its JSON text, taken at once: a later change
 * to the object given to `save` (or to what it refers to) never reaches the storage.
 *
 * @throws AgentCheckpointError `invalid_checkpoint` when it has no session id,
 * `unserializable_input` when it cannot be written as JSON (a cycle, a bigint), `quota_exceeded`
 * when it is larger than a load would accept.
 */
export function stringifyAgentCheckpoint(checkpoint: AgentCheckpoint): { sessionId: string; text: string } {
  const sessionId = checkpointSessionId(checkpoint);
  let text: string | undefined;
  try {
    text = JSON.stringify(checkpoint);
  } catch (error) {
    // The engine's message may quote keys of the value: kept in `cause`, out of the message.
    throw new AgentCheckpointError(
      'unserializable_input',
      `The checkpoint of session ${describeCheckpointKey(sessionId)} cannot be written as JSON`,
      { cause: error },
    );
  }
  if (typeof text !== 'string') {
    throw new AgentCheckpointError(
      'unserializable_input',
      `The checkpoint of session ${describeCheckpointKey(sessionId)} is not a JSON object`,
    );
  }
  if (text.length > DEFAULT_MAX_CHECKPOINT_SIZE) {
    throw new AgentCheckpointError(
      'quota_exceeded',
      `The checkpoint of session ${describeCheckpointKey(sessionId)} is larger than ${DEFAULT_MAX_CHECKPOINT_SIZE} characters, which a load would refuse; this save was skipped`,
      { path: '' },
    );
  }
  return { sessionId, text };
}

/**
 * Reads stored checkpoint text back as an untrusted value (for `parseAgentCheckpoint`).
 *
 * @throws AgentCheckpointError `invalid_checkpoint` when the text is not JSON (truncated or
 * corrupted). The message gives the text's length, never the text, nor the parser's message
 * (which quotes it).
 */
export function parseAgentCheckpointJson(text: unknown, sessionId: string): unknown {
  if (typeof text !== 'string') {
    throw new AgentCheckpointError(
      'invalid_checkpoint',
      `The stored checkpoint of session ${describeCheckpointKey(sessionId)} is ${text === null ? 'null' : typeof text}, not JSON text`,
      { path: '' },
    );
  }
  if (text.length > DEFAULT_MAX_CHECKPOINT_SIZE) {
    throw new AgentCheckpointError(
      'invalid_checkpoint',
      `The stored checkpoint of session ${describeCheckpointKey(sessionId)} is larger than ${DEFAULT_MAX_CHECKPOINT_SIZE} characters`,
      { path: '' },
    );
  }
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null) sizeCheckedValues.add(value);
    return value;
  } catch {
    throw new AgentCheckpointError(
      'invalid_checkpoint',
      `The stored checkpoint of session ${describeCheckpointKey(sessionId)} is not valid JSON (${text.length} characters: truncated or corrupted)`,
      { path: '' },
    );
  }
}
