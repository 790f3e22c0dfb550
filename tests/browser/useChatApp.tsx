// The page the useChat browser test drives: @ai-sdk/react's useChat, unchanged, pointed at the
// host's `/api/agent/chat` with DefaultChatTransport and `resume: true`. The chat id comes from
// `?chat=`. useChat keeps messages in memory only, so the page starts from the conversation the
// host holds (`GET /api/agent/sessions/:id/state`): a reload shows what was said, and the
// resumed stream replaces the assistant message it continues (its id is its first run's).

import { useChat } from '@ai-sdk/react';
import {
  DefaultChatTransport,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import type { AgentState } from '../../machines/agentState';

/** What the page rendered over its life, for the test to read: every text each message had, in order. */
export interface UseChatAppHistory {
  textsByMessage: Record<string, string[]>;
  statuses: string[];
}

declare global {
  var chatMessages: UIMessage[] | undefined;
  var chatHistory: UseChatAppHistory | undefined;
}

const history: UseChatAppHistory = { textsByMessage: {}, statuses: [] };
globalThis.chatHistory = history;

/** The run a chain of continuations starts from: its id is the id of the assistant message the stream builds. */
function firstRunOf(state: AgentState, runId: string): string {
  const seen = new Set<string>();
  let current = runId;
  for (;;) {
    seen.add(current);
    const previous = state.runs[current]?.continuesRunId;
    if (previous === undefined || seen.has(previous) || state.runs[previous] === undefined) return current;
    current = previous;
  }
}

/**
 * The conversation as UI messages: each user message, and the assistant's text of each chain
 * of runs as one message whose id is the chain's first run, as the host's stream names it.
 */
function toUIMessages(state: AgentState): UIMessage[] {
  const messages: UIMessage[] = [];
  for (const { kind, key } of state.order) {
    const entry = state.messages[key];
    if (kind !== 'message' || entry === undefined || typeof entry.content !== 'string') continue;
    if (entry.role === 'user') {
      messages.push({ id: entry.key, role: 'user', parts: [{ type: 'text', text: entry.content }] });
      continue;
    }
    if (entry.role !== 'assistant') continue;
    const id = firstRunOf(state, entry.runId);
    const last = messages.at(-1);
    const part = { type: 'text' as const, text: entry.content };
    if (last?.id === id) last.parts.push(part);
    else messages.push({ id, role: 'assistant', parts: [part] });
  }
  return messages;
}

/** The text of a message: its text parts, joined. */
const textOf = (message: UIMessage) => message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');

function Chat({ id, initialMessages }: { id: string; initialMessages: UIMessage[] }) {
  const { messages, status, error, sendMessage, addToolApprovalResponse } = useChat({
    id,
    messages: initialMessages,
    transport: new DefaultChatTransport({ api: '/api/agent/chat' }),
    resume: true,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [prompt, setPrompt] = useState('');
  globalThis.chatMessages = messages;
  if (history.statuses.at(-1) !== status) history.statuses.push(status);
  for (const message of messages) {
    const texts = history.textsByMessage[message.id] ?? [];
    history.textsByMessage[message.id] = texts;
    if (texts.at(-1) !== textOf(message)) texts.push(textOf(message));
  }
  return (
    <section>
      <output id="status">{status}</output>
      <output id="error">{error?.message ?? ''}</output>
      <ol id="messages">
        {messages.map((message, index) => (
          <li key={message.id} data-testid={`message-${index}`} data-role={message.role} data-id={message.id}>
            {message.parts.map((part, partIndex) => {
              const key = `${message.id}-${partIndex}`;
              if (part.type === 'text') {
                return (
                  <p key={key} data-testid="text" data-state={part.state ?? ''}>
                    {part.text}
                  </p>
                );
              }
              if (!isToolUIPart(part)) return null;
              return (
                <div key={key} data-testid="tool" data-type={part.type} data-state={part.state}>
                  <code data-testid="tool-input">{JSON.stringify(part.input ?? null)}</code>
                  {part.state === 'output-available' ? (
                    <code data-testid="tool-output">{JSON.stringify(part.output)}</code>
                  ) : null}
                  {part.state === 'approval-requested' ? (
                    <>
                      <button
                        type="button"
                        data-testid="approve"
                        onClick={() => void addToolApprovalResponse({ id: part.approval.id, approved: true })}
                      >
                        Approve
                      </button>
                      <button
                        type="button"
                        data-testid="reject"
                        onClick={() =>
                          void addToolApprovalResponse({ id: part.approval.id, approved: false, reason: 'Keep them' })
                        }
                      >
                        Reject
                      </button>
                    </>
                  ) : null}
                </div>
              );
            })}
          </li>
        ))}
      </ol>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void sendMessage({ text: prompt });
          setPrompt('');
        }}
      >
        <input id="prompt" value={prompt} onChange={(event) => setPrompt(event.target.value)} />
        <button id="send" type="submit">
          Send
        </button>
      </form>
    </section>
  );
}

async function main(): Promise<void> {
  const root = document.getElementById('root');
  if (root === null) throw new Error('no #root element');
  const id = new URLSearchParams(window.location.search).get('chat');
  if (id === null || id === '') throw new Error('no ?chat= in the URL');
  const response = await fetch(`/api/agent/sessions/${encodeURIComponent(id)}/state`);
  if (!response.ok) throw new Error(`GET state answered ${response.status}`);
  const { state } = (await response.json()) as { state: AgentState };
  createRoot(root).render(<Chat id={id} initialMessages={toUIMessages(state)} />);
}

void main();
