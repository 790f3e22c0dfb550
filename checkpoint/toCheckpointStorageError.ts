import { AgentCheckpointError, describeCheckpointKey } from './AgentCheckpointError';

/** Node's errno codes for a full disk or an exhausted quota. */
const FULL_DISK_CODES = new Set(['ENOSPC', 'EDQUOT']);

/**
 * Whether a storage refused a write for lack of space: the DOMException `QuotaExceededError`
 * (legacy code 22; Firefox's `NS_ERROR_DOM_QUOTA_REACHED`, code 1014) or a full disk.
 */
export function isQuotaExceededError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { name, code } = error as { name?: unknown; code?: unknown };
  if (name === 'QuotaExceededError' || name === 'NS_ERROR_DOM_QUOTA_REACHED') return true;
  if (typeof code === 'number') return code === 22 || code === 1014;
  return typeof code === 'string' && FULL_DISK_CODES.has(code);
}

/**
 * What a storage failure becomes: an AgentCheckpointError as it is, a full storage as
 * `quota_exceeded`, anything else as `storage_failed`; the original in `cause`.
 */
export function toCheckpointStorageError(
  error: unknown,
  action: 'load' | 'save' | 'remove',
  sessionId: string,
): AgentCheckpointError {
  if (AgentCheckpointError.isInstance(error)) return error;
  const session = describeCheckpointKey(sessionId);
  if (isQuotaExceededError(error)) {
    return new AgentCheckpointError(
      'quota_exceeded',
      `The storage is full: cannot ${action} the checkpoint of session ${session}`,
      {
        cause: error,
      },
    );
  }
  return new AgentCheckpointError(
    'storage_failed',
    `The storage failed to ${action} the checkpoint of session ${session}`,
    {
      cause: error,
    },
  );
}
