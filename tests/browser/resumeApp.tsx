// The page the reload test drives: useXChat keeps the conversation 'reload-test' in
// localStorage and resumes a running run from its saved cursor when the page loads again.
// The server's SSE frames carry our own AgentEvents, each with its sequence as `id:`.
import { StrictMode, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { createWebStorageAgentCheckpointStorage } from '../../checkpoint/createWebStorageAgentCheckpointStorage';
import type { AgentEvent } from '../../protocol/eventSchemas';
import type { AgentProvider } from '../../providers/AgentProvider';
import { eventTypesOf } from '../../providers/eventTypeGroups';
import { useXChat } from '../../react/useXChat';
import type { AgentConnectionState } from '../../runtime/connectionMachine';
import { createXChatConversations, type XChatConversations } from '../../runtime/xChatConversations';
import { AgentTransportError } from '../../transports/AgentTransportError';
import { createSSETransport, type SSEChunk } from '../../transports/createSSETransport';

/** What the server needs to make the events of a run: their session, their run, and what was asked. */
export interface ResumeAppRequest {
  sessionId: string;
  runId: string;
  prompt: string;
}

/**
 * A pass-through provider: the server numbers the run's events itself, so a resumed stream
 * continues the sequence the checkpoint left. Closing a run the stream left open is the
 * runner's (its tracker saw every event).
 */
const provider: AgentProvider<{ prompt: string }, ResumeAppRequest, SSEChunk, { sessionId: string; runId: string }> = {
  id: 'resume-app',
  protocol: { name: 'agent-event', version: '0.1' },
  capabilities: { eventTypes: eventTypesOf(['run', 'message']), transports: ['sse'], resumable: true },
  transport: createSSETransport<ResumeAppRequest>({ url: `${window.location.origin}/agent` }),
  createContext: ({ sessionId, runId }) => ({ sessionId, runId }),
  start: () => [],
  prepareRequest: ({ prompt }, { sessionId, runId }) => ({ sessionId, runId, prompt }),
  transformChunk: (chunk) => [JSON.parse(chunk.data) as AgentEvent],
  flush: () => [],
  transformError: () => [],
  classifyError: (error) => ({
    retryable: AgentTransportError.isInstance(error) && (error.code === 'network_error' || error.code === 'timeout'),
  }),
};
const checkpointStorage = createWebStorageAgentCheckpointStorage(localStorage);

// What this page load showed, for the test to read: every connection state in order, and
// every text each message had (a message restarted or doubled would show here).
const connectionStates: AgentConnectionState[] = [];
const textsByMessage: Record<string, string[]> = {};

function Chat({ conversations }: { conversations?: XChatConversations }) {
  const { messages, connectionState, isRequesting, onRequest } = useXChat({
    provider,
    conversationKey: 'reload-test',
    checkpointStorage,
    ...(conversations === undefined ? {} : { conversations }),
  });
  const [prompt, setPrompt] = useState('');
  if (connectionStates.at(-1) !== connectionState) connectionStates.push(connectionState);
  for (const { id, message } of messages) {
    const texts = textsByMessage[id] ?? [];
    textsByMessage[id] = texts;
    const text = String(message.content);
    if (texts.at(-1) !== text) texts.push(text);
  }
  return (
    <section>
      <output id="connection">{connectionState}</output>
      <output id="requesting">{String(isRequesting)}</output>
      <ol id="messages">
        {messages.map(({ id, message, status }, index) => (
          <li key={id} data-testid={`message-${index}`} data-role={message.role} data-status={status}>
            {String(message.content)}
          </li>
        ))}
      </ol>
      <input id="prompt" value={prompt} onChange={(event) => setPrompt(event.target.value)} />
      <button
        id="send"
        type="button"
        onClick={() => {
          void onRequest({ prompt });
          setPrompt('');
        }}
      >
        Send
      </button>
      <pre id="history">{JSON.stringify({ connectionStates, textsByMessage })}</pre>
    </section>
  );
}

const root = document.getElementById('root');
if (root === null) throw new Error('no #root element');
if (new URLSearchParams(window.location.search).get('strict') === '1') {
  // `?strict=1`: StrictMode mounts, unmounts and mounts again, and the conversation is
  // restored before the first render, so its resumed run is streaming by then (on a plain
  // page load that order is a race).
  const conversations = createXChatConversations();
  const runtime = conversations.get('reload-test', provider, { checkpointStorage });
  void runtime.restored.then(() =>
    createRoot(root).render(
      <StrictMode>
        <Chat conversations={conversations} />
      </StrictMode>,
    ),
  );
} else {
  createRoot(root).render(<Chat />);
}
