import type { AgentEvent } from '../../protocol/eventSchemas';
import { readFrames } from './hostClient';

/** What one reader of `/sessions/:id/events` got, resuming from its cursor after each end. */
export interface Reading {
  /** Cursors and events delivered, in order. */
  delivered: { cursor: string; event: AgentEvent; at: number }[];
  /** Cursors the host answered 410 for (a gap the log reported). */
  gaps: string[];
  /** Answers other than 200 while it resumed (503 while the master's slots had no master). */
  refused: number[];
}

/**
 * Follows a session's events until `done` says so, resuming with `last-event-id` whenever the
 * stream ends or fails (every 50 ms, within `deadline`); a 410 is the log's gap, and ends it.
 */
export async function followResuming(
  url: string,
  done: (events: AgentEvent[]) => boolean,
  deadline: number,
): Promise<Reading> {
  const reading: Reading = { delivered: [], gaps: [], refused: [] };
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const events = () => reading.delivered.map((entry) => entry.event);
  while (!done(events()) && Date.now() < deadline) {
    const cursor = reading.delivered.at(-1)?.cursor;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), Math.max(1, deadline - Date.now()));
    try {
      const response = await fetch(url, {
        headers: cursor === undefined ? {} : { 'last-event-id': cursor },
        signal: controller.signal,
      });
      if (response.status === 410) {
        reading.gaps.push(cursor ?? '');
        await response.body?.cancel();
        return reading;
      }
      if (!response.ok) {
        reading.refused.push(response.status);
        await response.body?.cancel();
      } else {
        for await (const frame of readFrames(response)) {
          if (frame.event !== undefined || frame.id === undefined) continue;
          reading.delivered.push({ cursor: frame.id, event: JSON.parse(frame.data) as AgentEvent, at: Date.now() });
          if (done(events())) break;
        }
      }
    } catch {
      // The connection failed or the deadline passed: resume, or end at the deadline.
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
    if (!done(events())) await sleep(50);
  }
  return reading;
}
