import { afterEach, describe, expect, it, vi } from 'vitest';
import { stubPaintedPage } from '../tests/support/paintedPage';
import { scheduleNotification } from './scheduleNotification';

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('scheduleNotification', () => {
  it('notifies in a task of its own where no frame comes, and not once cancelled', () => {
    vi.useFakeTimers();
    const notify = vi.fn();
    scheduleNotification(notify);
    expect(notify).not.toHaveBeenCalled();
    vi.advanceTimersByTime(0);
    expect(notify).toHaveBeenCalledTimes(1);

    const cancelled = vi.fn();
    scheduleNotification(cancelled)();
    vi.advanceTimersByTime(100);
    expect(cancelled).not.toHaveBeenCalled();
  });

  it('notifies at the next animation frame of a page that is shown, and at no task before it', () => {
    vi.useFakeTimers();
    const page = stubPaintedPage('visible');
    const notify = vi.fn();
    scheduleNotification(notify);
    vi.advanceTimersByTime(100);
    expect(notify).not.toHaveBeenCalled();
    expect(page.frames.size).toBe(1);
    page.runFrames();
    expect(notify).toHaveBeenCalledTimes(1);
    expect(page.visibilityListeners.size).toBe(0);

    const cancelled = vi.fn();
    scheduleNotification(cancelled)();
    expect(page.frames.size).toBe(0);
    expect(page.visibilityListeners.size).toBe(0);
    page.runFrames();
    vi.advanceTimersByTime(100);
    expect(cancelled).not.toHaveBeenCalled();
  });

  it('notifies in a task on a hidden page, and moves a pending frame to a task when the page is hidden', () => {
    vi.useFakeTimers();
    const page = stubPaintedPage('hidden');
    const hidden = vi.fn();
    scheduleNotification(hidden);
    expect(page.frames.size).toBe(0);
    vi.advanceTimersByTime(0);
    expect(hidden).toHaveBeenCalledTimes(1);

    page.setVisibility('visible');
    const pending = vi.fn();
    const cancel = scheduleNotification(pending);
    expect(page.frames.size).toBe(1);
    page.setVisibility('hidden');
    expect(page.frames.size).toBe(0);
    expect(page.visibilityListeners.size).toBe(0);
    vi.advanceTimersByTime(0);
    expect(pending).toHaveBeenCalledTimes(1);
    // Cancelling after it ran changes nothing; before, it cancels the task it moved to.
    cancel();
    const moved = vi.fn();
    page.setVisibility('visible');
    const cancelMoved = scheduleNotification(moved);
    page.setVisibility('hidden');
    cancelMoved();
    vi.advanceTimersByTime(100);
    expect(moved).not.toHaveBeenCalled();
  });
});
