import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sampleCheckpoint } from '../tests/support/checkpoints';
import type { AgentCheckpoint, AgentCheckpointStorage } from './AgentCheckpoint';
import type { AgentCheckpointError } from './AgentCheckpointError';
import { DEFAULT_MAX_CHECKPOINT_SIZE } from './checkpointLimits';
import {
  type AgentCheckpointCoordinatorOptions,
  type AgentCheckpointVisibility,
  createAgentCheckpointCoordinator,
} from './createAgentCheckpointCoordinator';
import { createMemoryAgentCheckpointStorage } from './createMemoryAgentCheckpointStorage';

const base = sampleCheckpoint();

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  return { promise, resolve, reject };
}

/**
 * A coordinator over a storage whose `save` answers through `answer` (at once by default),
 * recording what was saved, every `build` call and every error.
 */
function setup(
  options: Partial<AgentCheckpointCoordinatorOptions> & {
    answer?: (checkpoint: AgentCheckpoint) => Promise<void> | void;
  } = {},
) {
  const saved: AgentCheckpoint[] = [];
  const built: AgentCheckpoint[] = [];
  const errors: AgentCheckpointError[] = [];
  const { answer, ...rest } = options;
  const storage: AgentCheckpointStorage = {
    load: async () => undefined,
    save: vi.fn((checkpoint: AgentCheckpoint) => {
      saved.push(checkpoint);
      return answer === undefined ? Promise.resolve() : (answer(checkpoint) as Promise<void>);
    }),
    remove: async () => undefined,
  };
  const build = vi.fn(() => {
    const checkpoint = { ...base, savedAt: Date.now() };
    built.push(checkpoint);
    return checkpoint;
  });
  const coordinator = createAgentCheckpointCoordinator({
    storage,
    sessionId: 's1',
    build,
    visibility: null,
    onError: (error) => errors.push(error),
    ...rest,
  });
  return { coordinator, storage, build, saved, built, errors };
}

/** Lets promise callbacks run without moving the clock. */
const settle = () => vi.advanceTimersByTimeAsync(0);

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('createAgentCheckpointCoordinator: when it saves', () => {
  it('throttles batch and cursor updates to one save per window, building only when it saves', async () => {
    const { coordinator, saved, build } = setup({ throttleMs: 1000 });
    expect(build).not.toHaveBeenCalled();
    coordinator.schedule('batch');
    await settle();
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0]);
    for (let step = 1; step <= 250; step += 1) {
      await vi.advanceTimersByTimeAsync(10);
      coordinator.schedule(step % 2 === 0 ? 'batch' : 'cursor');
    }
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 1000, 2000]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 1000, 2000, 3000]);
    expect(build).toHaveBeenCalledTimes(4);
    await vi.advanceTimersByTimeAsync(5000);
    expect(build).toHaveBeenCalledTimes(4);
  });

  it('saves command, started and terminal updates at once, inside a throttle window too', async () => {
    const { coordinator, saved } = setup();
    coordinator.schedule('batch');
    await vi.advanceTimersByTimeAsync(100);
    coordinator.schedule('batch');
    coordinator.schedule('terminal');
    await settle();
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 100]);
    await vi.advanceTimersByTimeAsync(100);
    coordinator.schedule('command');
    await settle();
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 100, 200]);
    await vi.advanceTimersByTimeAsync(50);
    coordinator.schedule('batch');
    coordinator.schedule('started');
    await settle();
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 100, 200, 250]);
    // What was scheduled went out with the immediate saves: nothing is left to do.
    await vi.advanceTimersByTimeAsync(5000);
    expect(saved).toHaveLength(4);
  });

  it('keeps one save in flight and merges what is scheduled meanwhile into one save after it', async () => {
    const first = deferred();
    const { coordinator, saved, build } = setup({ answer: () => (saved.length === 1 ? first.promise : undefined) });
    coordinator.schedule('terminal');
    await vi.advanceTimersByTimeAsync(50);
    coordinator.schedule('batch');
    coordinator.schedule('command');
    coordinator.schedule('terminal');
    coordinator.schedule('cursor');
    await vi.advanceTimersByTimeAsync(50);
    expect(saved).toHaveLength(1);
    expect(build).toHaveBeenCalledTimes(1);
    first.resolve();
    await settle();
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 100]);
    expect(build).toHaveBeenCalledTimes(2);
  });

  it('after a save in flight, a merged batch update still waits for its throttle window', async () => {
    const first = deferred();
    const { coordinator, saved } = setup({ answer: () => (saved.length === 1 ? first.promise : undefined) });
    coordinator.schedule('batch');
    await vi.advanceTimersByTimeAsync(100);
    coordinator.schedule('batch');
    await vi.advanceTimersByTimeAsync(100);
    first.resolve();
    await settle();
    expect(saved).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(800);
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 1000]);
  });

  it('saves exactly what build returns', async () => {
    const { coordinator, storage, built } = setup();
    coordinator.schedule('terminal');
    await settle();
    expect(storage.save).toHaveBeenCalledTimes(1);
    // Seed 003 §12.2: save(checkpoint), kept under the checkpoint's own sessionId.
    expect(vi.mocked(storage.save).mock.calls[0]).toEqual([built[0]]);
    expect(vi.mocked(storage.save).mock.calls[0]?.[0]).toBe(built[0]);
    expect(built[0]?.sessionId).toBe('s1');
  });

  it('flush saves what is scheduled at once and resolves when the storage has it', async () => {
    const answer = deferred();
    const { coordinator, saved } = setup({ answer: () => (saved.length === 2 ? answer.promise : undefined) });
    coordinator.schedule('batch');
    await vi.advanceTimersByTimeAsync(10);
    coordinator.schedule('batch');
    let flushed = false;
    void coordinator.flush().then(() => {
      flushed = true;
    });
    await settle();
    expect(saved).toHaveLength(2);
    expect(flushed).toBe(false);
    answer.resolve();
    await settle();
    expect(flushed).toBe(true);
    await expect(coordinator.flush()).resolves.toBeUndefined();
    expect(saved).toHaveLength(2);
  });
});

describe('createAgentCheckpointCoordinator: failing storages', () => {
  it.each([
    [
      'throws',
      () => {
        throw new Error('sync failure');
      },
      'storage_failed',
    ],
    ['rejects', () => Promise.reject(new Error('async failure')), 'storage_failed'],
    ['is full', () => Promise.reject(new DOMException('full', 'QuotaExceededError')), 'quota_exceeded'],
  ] as const)('records a storage that %s, reports it, and keeps saving', async (_, fail, code) => {
    let failing = true;
    const { coordinator, saved, errors } = setup({ answer: () => (failing ? fail() : undefined) });
    expect(() => coordinator.schedule('terminal')).not.toThrow();
    await settle();
    expect(errors.map((error) => error.code)).toEqual([code]);
    expect(coordinator.lastError?.code).toBe(code);
    expect(coordinator.lastError?.cause).toBeInstanceOf(Error);
    expect(() => coordinator.schedule('command')).not.toThrow();
    await settle();
    expect(saved).toHaveLength(2);
    failing = false;
    coordinator.schedule('terminal');
    await settle();
    expect(saved).toHaveLength(3);
    expect(coordinator.lastError).toBeUndefined();
  });

  it('times out a storage that never answers, and starts the next save', async () => {
    const never = deferred();
    const { coordinator, saved, errors } = setup({
      saveTimeoutMs: 5000,
      answer: () => (saved.length === 1 ? never.promise : undefined),
    });
    coordinator.schedule('terminal');
    await vi.advanceTimersByTimeAsync(100);
    coordinator.schedule('terminal');
    await vi.advanceTimersByTimeAsync(4899);
    expect(saved).toHaveLength(1);
    expect(errors).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(errors.map((error) => error.code)).toEqual(['storage_timeout']);
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 5000]);
    // The save after it succeeded: lastError tells the state of the latest save.
    expect(coordinator.lastError).toBeUndefined();
  });

  it('saves again after a timed-out save answers late, since it may have overwritten a newer one', async () => {
    const late = deferred();
    const { coordinator, saved } = setup({
      saveTimeoutMs: 5000,
      throttleMs: 1000,
      answer: () => (saved.length === 1 ? late.promise : undefined),
    });
    coordinator.schedule('terminal');
    await vi.advanceTimersByTimeAsync(5000);
    coordinator.schedule('terminal');
    await settle();
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 5000]);
    await vi.advanceTimersByTimeAsync(100);
    late.resolve();
    await vi.advanceTimersByTimeAsync(1000);
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 5000, 6000]);
  });

  it('ignores an onError that throws', async () => {
    const { coordinator, saved } = setup({
      answer: () => Promise.reject(new Error('failure')),
      onError: () => {
        throw new Error('handler failure');
      },
    });
    expect(() => coordinator.schedule('terminal')).not.toThrow();
    await settle();
    coordinator.schedule('terminal');
    await settle();
    expect(saved).toHaveLength(2);
    expect(coordinator.lastError?.code).toBe('storage_failed');
  });
});

describe('createAgentCheckpointCoordinator: skipped saves', () => {
  it('skips a save whose input is not plain JSON, naming the run and not the content', async () => {
    let input: unknown = { at: new Date(0), secret: 'SECRET-PROMPT' };
    const { coordinator, storage, errors } = setup({ build: () => ({ ...base, inputByRun: { r1: input } }) });
    coordinator.schedule('terminal');
    await settle();
    expect(storage.save).not.toHaveBeenCalled();
    expect(errors).toHaveLength(1);
    const [error] = errors;
    expect({ code: error?.code, runId: error?.runId, path: error?.path }).toEqual({
      code: 'unserializable_input',
      runId: 'r1',
      path: 'inputByRun.r1.at',
    });
    expect(error?.message).toContain('"r1"');
    expect(error?.message).not.toContain('SECRET');
    input = { prompt: 'fine' };
    coordinator.schedule('terminal');
    await settle();
    expect(storage.save).toHaveBeenCalledTimes(1);
    expect(coordinator.lastError).toBeUndefined();
  });

  it('skips a save when build throws, keeping the cause', async () => {
    const cause = new Error('cannot build');
    const { coordinator, storage } = setup({
      build: () => {
        throw cause;
      },
    });
    expect(() => coordinator.schedule('terminal')).not.toThrow();
    await settle();
    expect(storage.save).not.toHaveBeenCalled();
    expect(coordinator.lastError).toMatchObject({ code: 'unserializable_input', cause });
  });

  it('skips a checkpoint of another session, and one a load would refuse as too large', async () => {
    const other = setup({ build: () => ({ ...base, sessionId: 's2' }) });
    other.coordinator.schedule('terminal');
    await settle();
    expect(other.storage.save).not.toHaveBeenCalled();
    expect(other.coordinator.lastError).toMatchObject({ code: 'invalid_checkpoint', path: 'sessionId' });

    // What the application gave is measured here; a large state is the storage's to refuse.
    const large = setup({
      maxSize: 1000,
      build: () => ({ ...base, inputByRun: { r1: { prompt: 'x'.repeat(2000) } } }),
    });
    large.coordinator.schedule('terminal');
    await settle();
    expect(large.storage.save).not.toHaveBeenCalled();
    expect(large.coordinator.lastError?.code).toBe('quota_exceeded');
    expect(large.coordinator.lastError?.message).not.toContain('xxx');
  });

  it('leaves a large state to the storage, whose text over the limit is refused as quota_exceeded', async () => {
    const storage = createMemoryAgentCheckpointStorage();
    const huge = { ...base, inputByRun: { r1: { prompt: 'y'.repeat(DEFAULT_MAX_CHECKPOINT_SIZE) } } };
    await expect(storage.save(huge)).rejects.toMatchObject({ code: 'quota_exceeded' });
    expect(await storage.load(base.sessionId)).toBeUndefined();
  });

  it('lets a skipped save that was scheduled again by onError wait for the throttle window', async () => {
    let coordinator: ReturnType<typeof createAgentCheckpointCoordinator> | undefined;
    const build = vi.fn((): AgentCheckpoint => {
      throw new Error('always');
    });
    coordinator = setup({ build, onError: () => coordinator?.schedule('terminal') }).coordinator;
    coordinator.schedule('terminal');
    await vi.advanceTimersByTimeAsync(2500);
    expect(build).toHaveBeenCalledTimes(3);
    coordinator.stop();
  });
});

describe('createAgentCheckpointCoordinator: page visibility and stop', () => {
  function fakeDocument() {
    const listeners = new Set<() => void>();
    const document = {
      visibilityState: 'visible',
      addEventListener: (_type: 'visibilitychange', listener: () => void) => listeners.add(listener),
      removeEventListener: (_type: 'visibilitychange', listener: () => void) => listeners.delete(listener),
    } satisfies AgentCheckpointVisibility;
    const change = (state: string) => {
      document.visibilityState = state;
      for (const listener of listeners) listener();
    };
    return { document, listeners, change };
  }

  it('saves at once when the page turns hidden', async () => {
    const page = fakeDocument();
    const { coordinator, saved } = setup({ visibility: page.document });
    coordinator.schedule('batch');
    await vi.advanceTimersByTimeAsync(10);
    coordinator.schedule('batch');
    page.change('visible');
    await settle();
    expect(saved).toHaveLength(1);
    page.change('hidden');
    await settle();
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 10]);
  });

  it('listens on globalThis.document by default', async () => {
    const page = fakeDocument();
    vi.stubGlobal('document', page.document);
    const save = vi.fn(async () => undefined);
    const coordinator = createAgentCheckpointCoordinator({
      storage: { load: async () => undefined, save, remove: async () => undefined },
      sessionId: 's1',
      build: () => base,
    });
    expect(page.listeners.size).toBe(1);
    coordinator.schedule('batch');
    coordinator.schedule('batch');
    page.change('hidden');
    await settle();
    expect(save).toHaveBeenCalledTimes(2);
    coordinator.stop();
    expect(page.listeners.size).toBe(0);
  });

  it('stop removes the listener and every timer; nothing is saved after it', async () => {
    const page = fakeDocument();
    const { coordinator, saved } = setup({ visibility: page.document });
    coordinator.schedule('batch');
    coordinator.schedule('batch');
    await settle();
    expect(vi.getTimerCount()).toBe(1);
    coordinator.stop();
    expect(vi.getTimerCount()).toBe(0);
    expect(page.listeners.size).toBe(0);
    coordinator.schedule('terminal');
    await vi.advanceTimersByTimeAsync(5000);
    expect(saved).toHaveLength(1);
  });

  it('stop during a save that never answers leaves no timer, and flush then resolves', async () => {
    const { coordinator, saved } = setup({ answer: () => new Promise<void>(() => undefined) });
    coordinator.schedule('terminal');
    await settle();
    expect(saved).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(1);
    coordinator.stop();
    expect(vi.getTimerCount()).toBe(0);
    await expect(coordinator.flush()).resolves.toBeUndefined();
  });
});
