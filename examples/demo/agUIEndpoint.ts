import type { ServerResponse } from 'node:http';
import { type BaseEvent, EventType, type RunAgentInput } from '@ag-ui/core';
import { EventEncoder } from '@ag-ui/encoder';
import { toDeltas } from './sseReplay';

const encoder = new EventEncoder();
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const event = (fields: { type: EventType } & Record<string, unknown>) => fields as BaseEvent;

/** The interrupt a run asks about and the tool call it guards share the run's id. */
const toolCallIdOf = (interruptId: string) => interruptId.replace(/^int-/, 'call-');

function textMessage(messageId: string, text: string): BaseEvent[] {
  return [
    event({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' }),
    ...toDeltas(text).map((delta) => event({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta })),
    event({ type: EventType.TEXT_MESSAGE_END, messageId }),
  ];
}

/** A run that finds old logs, proposes deleting them, and stops for the user's answer (an interrupt). */
function interruptingRun({ threadId, runId }: RunAgentInput): BaseEvent[] {
  const thinking = `think-${runId}`;
  const toolCallId = `call-${runId}`;
  return [
    event({ type: EventType.RUN_STARTED, threadId, runId }),
    event({ type: EventType.REASONING_START, messageId: thinking }),
    event({ type: EventType.REASONING_MESSAGE_START, messageId: thinking, role: 'reasoning' }),
    ...toDeltas('Disk is 91% full; the logs folder is the largest. Deleting needs consent.').map((delta) =>
      event({ type: EventType.REASONING_MESSAGE_CONTENT, messageId: thinking, delta }),
    ),
    event({ type: EventType.REASONING_MESSAGE_END, messageId: thinking }),
    event({ type: EventType.REASONING_END, messageId: thinking }),
    event({ type: EventType.STEP_STARTED, stepName: 'Scan the logs folder' }),
    event({ type: EventType.STEP_FINISHED, stepName: 'Scan the logs folder' }),
    ...textMessage(`msg-${runId}`, 'I found 12 log files older than 30 days. Deleting them needs your approval.'),
    event({
      type: EventType.TOOL_CALL_START,
      toolCallId,
      toolCallName: 'delete_files',
      parentMessageId: `msg-${runId}`,
    }),
    event({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta: '{"glob":' }),
    event({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta: '"logs/*.log"}' }),
    event({ type: EventType.TOOL_CALL_END, toolCallId }),
    event({
      type: EventType.RUN_FINISHED,
      threadId,
      runId,
      outcome: {
        type: 'interrupt',
        interrupts: [{ id: `int-${runId}`, reason: 'confirmation', message: 'Delete 12 log files?', toolCallId }],
      },
    }),
  ];
}

/** The run that continues after the user's answer, as the resume entry carries it. */
function resumedRun(input: RunAgentInput): BaseEvent[] {
  const { threadId, runId } = input;
  const entry = input.resume?.[0];
  const payload = (entry?.payload ?? {}) as { decision?: string; data?: { glob?: string } };
  const approved = entry?.status === 'resolved' && payload.decision !== 'rejected';
  const glob = payload.data?.glob ?? 'logs/*.log';
  const toolCallId = toolCallIdOf(entry?.interruptId ?? '');
  return [
    event({ type: EventType.RUN_STARTED, threadId, runId }),
    event({
      type: EventType.TOOL_CALL_RESULT,
      messageId: `result-${runId}`,
      toolCallId,
      content: approved ? `deleted 12 files matching ${glob}` : 'not run: the user said no',
    }),
    ...textMessage(
      `msg-${runId}`,
      approved ? `Done: 12 files matching ${glob} deleted, 2.1 GB freed.` : 'OK, I left the files alone.',
    ),
    event({ type: EventType.RUN_FINISHED, threadId, runId, outcome: { type: 'success' } }),
  ];
}

/**
 * `/agui`: an AG-UI agent encoded with `@ag-ui/encoder`. A new prompt gets a run that ends
 * with an interrupt; a request with `resume` entries gets the run that carries out the answer.
 */
export async function handleAgUI(body: string, response: ServerResponse): Promise<void> {
  const input = JSON.parse(body) as RunAgentInput;
  const events = (input.resume?.length ?? 0) > 0 ? resumedRun(input) : interruptingRun(input);
  response.writeHead(200, { 'content-type': encoder.getContentType(), 'cache-control': 'no-cache' });
  for (const item of events) {
    if (response.destroyed) return;
    response.write(encoder.encodeSSE(item));
    await pause(50);
  }
  response.end();
}
