import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sampleCheckpoint } from '../tests/support/checkpoints';
import type { AgentCheckpoint } from './AgentCheckpoint';
import type { AgentCheckpointError } from './AgentCheckpointError';
import { createAgentCheckpointCoordinator } from './createAgentCheckpointCoordinator';

const base = sampleCheckpoint();

/**
 * A coordinator whose storage answers each save through the promise `answers` gives for it
 * (at once when it gives none), recording what was saved and every error reported.
 */
function coordinatorOver(
  answers: Array<Promise<void> | undefined>,
  options: { build?: () => AgentCheckpoint; throttleMs?: number; saveTimeoutMs?: number } = {},
) {
  const saved: AgentCheckpoint[] = [];
  const errors: AgentCheckpointError[] = [];
  const listeners = new Set<() => void>();
  const visibility = {
    visibilityState: 'visible',
    addEventListener: (_type: 'visibilitychange', listener: () => void) => listeners.add(listener),
    removeEventListener: vi.fn((_type: 'visibilitychange', listener: () => void) => listeners.delete(listener)),
  };
  const coordinator = createAgentCheckpointCoordinator({
    storage: {
      load: async () => undefined,
      save: (checkpoint) => {
        saved.push(checkpoint);
        return answers[saved.length - 1] ?? Promise.resolve();
      },
      remove: async () => undefined,
    },
    sessionId: 's1',
    build: options.build ?? (() => ({ ...base, savedAt: Date.now() })),
    throttleMs: options.throttleMs ?? 1000,
    saveTimeoutMs: options.saveTimeoutMs ?? 5000,
    visibility,
    onError: (error) => errors.push(error),
  });
  return { coordinator, saved, errors, listeners, visibility };
}

function later() {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  return { promise, resolve, reject };
}

/** Lets promise callbacks run without moving the clock. */
const settle = () => vi.advanceTimersByTimeAsync(0);

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('createAgentCheckpointCoordinator: a save that answers after its timeout', () => {
  it('reports a late failure no second time and saves nothing more for it', async () => {
    const first = later();
    const { coordinator, saved, errors } = coordinatorOver([first.promise]);
    coordinator.schedule('terminal');
    await vi.advanceTimersByTimeAsync(5000);
    expect(errors.map((error) => error.code)).toEqual(['storage_timeout']);
    coordinator.schedule('terminal');
    await settle();
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 5000]);
    first.reject(new Error('written nowhere'));
    await vi.advanceTimersByTimeAsync(5000);
    expect(errors.map((error) => error.code)).toEqual(['storage_timeout']);
    expect(saved).toHaveLength(2);
    expect(coordinator.lastError).toBeUndefined();
  });

  it('saves again once, when the window opens, if it answers while a save already waits for the window', async () => {
    const first = later();
    const { coordinator, saved } = coordinatorOver([first.promise]);
    coordinator.schedule('terminal');
    await vi.advanceTimersByTimeAsync(5000);
    coordinator.schedule('terminal');
    await vi.advanceTimersByTimeAsync(100);
    coordinator.schedule('batch');
    await settle();
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 5000]);
    // Written late while the batch save waits for its window (which opens at 6000).
    first.resolve();
    await vi.advanceTimersByTimeAsync(899);
    expect(saved).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(saved.map((checkpoint) => checkpoint.savedAt)).toEqual([0, 5000, 6000]);
    await vi.advanceTimersByTimeAsync(5000);
    expect(saved).toHaveLength(3);
  });
});

describe('createAgentCheckpointCoordinator: stop', () => {
  it('still reports the failure of the save that was in flight when it stopped', async () => {
    const inFlight = later();
    const { coordinator, saved, errors } = coordinatorOver([inFlight.promise]);
    coordinator.schedule('terminal');
    await settle();
    coordinator.stop();
    inFlight.reject(new Error('disk gone'));
    await settle();
    expect(saved).toHaveLength(1);
    expect(errors.map((error) => error.code)).toEqual(['storage_failed']);
    expect(coordinator.lastError?.cause).toEqual(new Error('disk gone'));
  });

  it('clears lastError when the save in flight at stop succeeds, and saves nothing more', async () => {
    const inFlight = later();
    const { coordinator, saved, errors } = coordinatorOver([Promise.reject(new Error('once')), inFlight.promise]);
    coordinator.schedule('terminal');
    await settle();
    expect(coordinator.lastError?.code).toBe('storage_failed');
    coordinator.schedule('terminal');
    await settle();
    coordinator.stop();
    inFlight.resolve();
    coordinator.schedule('terminal');
    await vi.advanceTimersByTimeAsync(5000);
    expect(saved).toHaveLength(2);
    expect(errors).toHaveLength(1);
    expect(coordinator.lastError).toBeUndefined();
  });

  it('lets the save build was making when it called stop reach the storage, and saves nothing after it', async () => {
    let stop: (() => void) | undefined;
    const { coordinator, saved, errors } = coordinatorOver([], {
      build: () => {
        stop?.();
        return { ...base, savedAt: Date.now() };
      },
    });
    stop = coordinator.stop;
    coordinator.schedule('terminal');
    await settle();
    expect(saved).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
    coordinator.schedule('terminal');
    await vi.advanceTimersByTimeAsync(5000);
    expect(saved).toHaveLength(1);
    expect(errors).toEqual([]);
  });

  it('is done once: a second stop changes nothing', async () => {
    const { coordinator, listeners, visibility } = coordinatorOver([]);
    expect(listeners.size).toBe(1);
    coordinator.stop();
    coordinator.stop();
    expect(listeners.size).toBe(0);
    expect(visibility.removeEventListener).toHaveBeenCalledTimes(1);
  });
});

describe('createAgentCheckpointCoordinator: what build returns', () => {
  it('skips a save whose run input is itself not plain JSON, naming the input', async () => {
    const { coordinator, saved, errors } = coordinatorOver([], {
      build: () => ({ ...base, inputByRun: { r1: new Date(0) } }),
    });
    coordinator.schedule('terminal');
    await settle();
    expect(saved).toEqual([]);
    expect(errors.map((error) => ({ code: error.code, path: error.path, runId: error.runId }))).toEqual([
      { code: 'unserializable_input', path: 'inputByRun.r1', runId: 'r1' },
    ]);
  });

  it('hands a checkpoint built without state or inputs to the storage, which holds it to its own checks', async () => {
    // A build in plain JavaScript may leave fields out; the coordinator checks what it can and
    // never throws into the run that scheduled the save.
    const partial = { ...base, state: undefined, inputByRun: undefined } as unknown as AgentCheckpoint;
    const { coordinator, saved, errors } = coordinatorOver([], { build: () => partial });
    expect(() => coordinator.schedule('terminal')).not.toThrow();
    await settle();
    expect(saved).toEqual([partial]);
    expect(errors).toEqual([]);
  });
});
