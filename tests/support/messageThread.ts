import type { AgentMessageState } from '../../machines/agentState';
import type { AgentMessageInfo } from '../../machines/selectors';
import { createAgentEventFactory } from '../../protocol/createAgentEventFactory';
import type { AgentEvent } from '../../protocol/eventSchemas';
import { createLocalAgentProvider } from '../../providers/local/createLocalAgentProvider';
import { createXChatRuntime } from '../../runtime/createXChatRuntime';
import { createXChatSource } from '../../runtime/createXChatSource';
import { createXChatMessageLayer } from '../../runtime/xChatMessageLayer';

/** A finished assistant message `id` of run-1 as a list shows it. */
export function messageInfo(id: string, content = `text of ${id}`): AgentMessageInfo {
  const message: AgentMessageState = {
    id,
    key: id,
    runId: 'run-1',
    sessionId: 's1',
    role: 'assistant',
    content,
    status: 'completed',
    createdAt: 0,
    updatedAt: 0,
  };
  return { id, message, status: 'success' };
}

/** `count` finished messages m0, m1, ... */
export const messageThread = (count: number) => Array.from({ length: count }, (_, index) => messageInfo(`m${index}`));

/** The same thread with one more token in its last message: a new array, a new last entry. */
export function withToken(messages: readonly AgentMessageInfo[]): AgentMessageInfo[] {
  const last = messages.at(-1) as AgentMessageInfo;
  return [...messages.slice(0, -1), messageInfo(last.id, `${String(last.message.content)} more`)];
}

/**
 * A conversation of `earlier` finished messages (m0, m1, ..., "Message <i>", each of
 * `roleOf(i)`) and an answer started in the same run, and its chat source: the thread a
 * list test renders before it streams into `answer` with `events`.
 */
export function streamingThread(earlier: number, roleOf: (index: number) => 'user' | 'assistant' = () => 'assistant') {
  const runtime = createXChatRuntime({ provider: createLocalAgentProvider({ script: { steps: [] } }) });
  const events = createAgentEventFactory({ sessionId: runtime.sessionId, runId: 'run-1' });
  const seed: AgentEvent[] = [events.create('run.started', {})];
  for (let index = 0; index < earlier; index += 1) {
    const messageId = `m${index}`;
    seed.push(
      events.create('message.started', { messageId, role: roleOf(index) }),
      events.create('message.delta', { messageId, delta: `Message ${index}` }),
      events.create('message.completed', { messageId }),
    );
  }
  seed.push(events.create('message.started', { messageId: 'answer', role: 'assistant' }));
  runtime.store.batch(seed);
  const chat = createXChatSource(
    runtime,
    createXChatMessageLayer({ readMessages: () => runtime.getSnapshot().messages }),
  );
  return { runtime, events, chat };
}
