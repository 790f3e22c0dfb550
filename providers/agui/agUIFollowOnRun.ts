import type { RunStartedEvent } from '@ag-ui/core';
import { getOwn } from '../../machines/agentStateProjection';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { createAgentRunEmitter } from '../createAgentRunEmitter';
import type { AgUIContextState } from './agUIContext';

/**
 * Whether a RUN_STARTED starts another run of the stream: AG-UI lets a stream go on after
 * RUN_FINISHED with a new RUN_STARTED (after RUN_ERROR it accepts nothing more).
 */
export function startsFollowOnRun(context: AgUIContextState): boolean {
  const { tracker } = context.events;
  return tracker.hasEnded && tracker.terminalType !== 'run.failed';
}

/** A run id no run of the stream or the session has: the AG-UI one, else the stream's first run id and the run's place. */
function followOnRunIdOf(event: RunStartedEvent, context: AgUIContextState): string {
  const taken = (runId: string) =>
    context.runIds.has(runId) || (context.history !== undefined && getOwn(context.history.runs, runId) !== undefined);
  if (event.runId !== '' && !taken(event.runId)) return event.runId;
  let place = context.runCount + 1;
  while (taken(`${context.firstRunId}-${place}`)) place += 1;
  return `${context.firstRunId}-${place}`;
}

/**
 * Starts the stream's next run on a RUN_STARTED after RUN_FINISHED: a run of its own in
 * AgentState, under the AG-UI `runId` (or, when that names a run already, the first run's id
 * and its place: `run-1-2`), with its own sequence from 1. From here on the context maps
 * chunks into that run; the runner follows it because the provider declares `followOnRuns`.
 * Messages known stay known, so a MESSAGES_SNAPSHOT of the new run hydrates nothing twice.
 */
export function startFollowOnRun(event: RunStartedEvent, context: AgUIContextState): AgentEvent[] {
  const runId = followOnRunIdOf(event, context);
  context.runIds.add(runId);
  context.runIds.add(event.runId);
  context.runCount += 1;
  context.events = createAgentRunEmitter({
    sessionId: context.events.sessionId,
    runId,
    initialSequence: 0,
    now: context.now,
  });
  context.threadId = event.threadId;
  context.serverRun = { threadId: event.threadId, runId: event.runId };
  context.toolCalls = [];
  context.toolResults = new Set();
  context.openSteps = new Map();
  context.stepCount = 0;
  // Answers belonged to the run the request continued, not to this one.
  context.continuation = undefined;
  context.unconfirmedAnswers = [];
  const agui: Record<string, unknown> = { threadId: event.threadId, runId: event.runId };
  if (typeof event.parentRunId === 'string') agui.parentRunId = event.parentRunId;
  // The stream's input, as the first run's: a run that continues this one rebuilds its request from it.
  const payload: { input?: unknown } = {};
  if (context.input !== undefined) payload.input = context.input;
  return [context.events.emit('run.started', payload, { meta: { agui } })];
}
