/** Cancels a notification that has not run yet. */
export type CancelNotification = () => void;

/** Whether the page is shown and paints frames: an animation frame will come. */
function paintsFrames(): boolean {
  return (
    typeof requestAnimationFrame === 'function' &&
    typeof document !== 'undefined' &&
    document.visibilityState === 'visible'
  );
}

function inNextTask(notify: () => void): CancelNotification {
  const timer = setTimeout(notify, 0);
  return () => clearTimeout(timer);
}

/**
 * The one notification scheduler of the runtime and its views: runs `notify` at the next
 * animation frame in a browser whose page is shown, else in a task of its own. A frame is
 * where a change can show; elsewhere (a server, a worker, a hidden tab, whose frames the
 * browser holds back) the next task is as soon as a batch of changes is whole. A frame still
 * pending when the page is hidden gives way to a task, so nothing waits for the page to show.
 *
 * @example
 * let cancel: CancelNotification | undefined;
 * const changed = () => {
 *   cancel ??= scheduleNotification(() => {
 *     cancel = undefined;
 *     render();
 *   });
 * };
 */
export function scheduleNotification(notify: () => void): CancelNotification {
  if (!paintsFrames()) return inNextTask(notify);
  let cancel: CancelNotification;
  const onVisibilityChange = () => {
    if (document.visibilityState === 'visible') return;
    cancel();
    cancel = inNextTask(notify);
  };
  const frame = requestAnimationFrame(() => {
    document.removeEventListener('visibilitychange', onVisibilityChange);
    notify();
  });
  document.addEventListener('visibilitychange', onVisibilityChange);
  cancel = () => {
    cancelAnimationFrame(frame);
    document.removeEventListener('visibilitychange', onVisibilityChange);
  };
  return () => cancel();
}
