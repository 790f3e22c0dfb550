import { vi } from 'vitest';

/**
 * A browser page in a Node test: `requestAnimationFrame`, `cancelAnimationFrame` and
 * `document` (its `visibilityState` and `visibilitychange` listeners) stubbed on the global
 * object, the frames run when the test says (`runFrames`). `vi.unstubAllGlobals()` takes it away.
 */
export function stubPaintedPage(visibilityState: 'visible' | 'hidden' = 'visible') {
  const frames = new Map<number, FrameRequestCallback>();
  const visibilityListeners = new Set<() => void>();
  let nextFrame = 1;
  const page = { visibilityState };
  vi.stubGlobal('requestAnimationFrame', (callback: FrameRequestCallback) => {
    frames.set(nextFrame, callback);
    return nextFrame++;
  });
  vi.stubGlobal('cancelAnimationFrame', (frame: number) => frames.delete(frame));
  vi.stubGlobal('document', {
    get visibilityState() {
      return page.visibilityState;
    },
    addEventListener: (type: string, listener: () => void) => {
      if (type === 'visibilitychange') visibilityListeners.add(listener);
    },
    removeEventListener: (type: string, listener: () => void) => {
      if (type === 'visibilitychange') visibilityListeners.delete(listener);
    },
  });
  return {
    /** The frames requested and not yet run or cancelled. */
    frames,
    visibilityListeners,
    /** Runs the frames requested so far (not those they request). */
    runFrames() {
      const due = [...frames.values()];
      frames.clear();
      for (const callback of due) callback(0);
    },
    setVisibility(next: 'visible' | 'hidden') {
      page.visibilityState = next;
      for (const listener of [...visibilityListeners]) listener();
    },
  };
}
