import { createHash, randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { mkdir, open, rename, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { AgentCheckpointStorage } from './AgentCheckpoint';
import { AgentCheckpointError, describeCheckpointKey } from './AgentCheckpointError';
import { parseAgentCheckpointJson, stringifyAgentCheckpoint } from './checkpointJson';
import { DEFAULT_MAX_CHECKPOINT_SIZE } from './checkpointLimits';
import { toCheckpointStorageError } from './toCheckpointStorageError';

/**
 * Files larger than this are not read: a checkpoint `parseAgentCheckpoint` accepts is at most
 * `DEFAULT_MAX_CHECKPOINT_SIZE` characters, which UTF-8 and JSON escapes make at most a few
 * times as many bytes.
 */
const MAX_FILE_BYTES = 4 * DEFAULT_MAX_CHECKPOINT_SIZE;

/** Longest hex name kept readable; longer ids are hashed, so names (and temp names) stay under 255 bytes. */
const MAX_HEX_NAME = 160;

/**
 * The file name of a session: its id's UTF-8 bytes in lowercase hex, so no id (`../x`, `a/b`,
 * `CON`, one differing only in case on a case-insensitive disk) can leave the directory or
 * collide with another; a SHA-256 of the id when that would be too long. The checkpoint
 * inside names its session, which `loadAgentCheckpoint` checks.
 *
 * @example
 * getAgentCheckpointFileName('../x'); // 'session-2e2e2f78.json'
 */
export function getAgentCheckpointFileName(sessionId: string): string {
  const hex = Buffer.from(sessionId, 'utf8').toString('hex');
  if (hex.length <= MAX_HEX_NAME) return `session-${hex}.json`;
  return `session-sha256-${createHash('sha256').update(sessionId, 'utf8').digest('hex')}.json`;
}

/**
 * Opening for reading never waits: a FIFO put where a checkpoint file should be would
 * otherwise block `open` (and a thread of libuv's pool) until something writes to it.
 * (`O_NONBLOCK` is 0 where the platform has none: Windows; Linux and macOS define it.)
 */
/* v8 ignore next */
const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

/** What a file that is not a regular one is, for a message. */
function describeFileType(stats: Stats): string {
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isDirectory()) return 'a directory';
  // A socket, a block device or another kind does not get here on Linux or macOS without root:
  // opening a socket fails (ENXIO) first, a block device needs root, fstat knows no other kind.
  /* v8 ignore start */
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  return 'not a file';
  /* v8 ignore stop */
}

/** Refuses what is not a regular file, before reading it. */
function notRegular(sessionId: string, type: string): AgentCheckpointError {
  return new AgentCheckpointError(
    'invalid_checkpoint',
    `The stored checkpoint of session ${describeCheckpointKey(sessionId)} is not a regular file (${type}); it was not read`,
    { path: '' },
  );
}

function errorCode(error: unknown): unknown {
  // node:fs/promises rejects with Error objects only.
  return typeof error === 'object' && error !== null
    ? (error as { code?: unknown }).code
    : /* v8 ignore next */ undefined;
}

/**
 * A storage of one JSON file per session in `directory` (created when first needed), for
 * Node: a CLI, a desktop app, a server with a disk. A save writes a temporary file beside the
 * target, flushes it to disk and renames it over the target, so a reader (or a crash) sees
 * the old checkpoint or the new one, never part of one. A missing file loads as `undefined`;
 * a truncated one, or anything but a regular file (a FIFO, a directory, a device: refused
 * before it is read, never waited on), is `invalid_checkpoint`; a full disk `quota_exceeded`.
 * Files are created readable by their owner only (and the directory, when this creates it),
 * since a checkpoint holds the conversation and the runs' inputs.
 *
 * @example
 * import { createFileAgentCheckpointStorage } from 'agent-machines/checkpoint/node';
 * const storage = createFileAgentCheckpointStorage(join(os.homedir(), '.my-agent', 'checkpoints'));
 */
export function createFileAgentCheckpointStorage(directory: string): AgentCheckpointStorage {
  const pathOf = (sessionId: string) => join(directory, getAgentCheckpointFileName(sessionId));

  async function readText(sessionId: string): Promise<string | undefined> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(pathOf(sessionId), READ_FLAGS);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      // Windows refuses to open a directory; Linux and macOS open it, and the stat below refuses it.
      /* v8 ignore if */
      if (errorCode(error) === 'EISDIR') throw notRegular(sessionId, 'a directory');
      throw error;
    }
    try {
      // Checked on the opened handle, so nothing can be swapped in between.
      const stats = await handle.stat();
      if (!stats.isFile()) throw notRegular(sessionId, describeFileType(stats));
      const { size } = stats;
      if (size > MAX_FILE_BYTES) {
        throw new AgentCheckpointError(
          'invalid_checkpoint',
          `The stored checkpoint of session ${describeCheckpointKey(sessionId)} is ${size} bytes, over the ${MAX_FILE_BYTES} a checkpoint may take`,
          { path: '' },
        );
      }
      return await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  }

  return {
    async load(sessionId) {
      let text: string | undefined;
      try {
        text = await readText(sessionId);
      } catch (error) {
        throw toCheckpointStorageError(error, 'load', sessionId);
      }
      return text === undefined ? undefined : parseAgentCheckpointJson(text, sessionId);
    },

    async save(checkpoint) {
      const { sessionId, text } = stringifyAgentCheckpoint(checkpoint);
      const target = pathOf(sessionId);
      // In the same directory, so the rename stays on one file system and is atomic.
      const temporary = `${target}.${randomBytes(8).toString('hex')}.tmp`;
      try {
        await mkdir(directory, { recursive: true, mode: 0o700 });
        const handle = await open(temporary, 'wx', 0o600);
        try {
          await handle.writeFile(text, 'utf8');
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(temporary, target);
      } catch (error) {
        await unlink(temporary).catch(() => undefined);
        throw toCheckpointStorageError(error, 'save', sessionId);
      }
    },

    async remove(sessionId) {
      try {
        await rm(pathOf(sessionId), { force: true });
      } catch (error) {
        throw toCheckpointStorageError(error, 'remove', sessionId);
      }
    },
  };
}
