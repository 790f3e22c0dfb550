// The page the browser test drives: useXChat over the OpenAI-compatible provider,
// against the test server's /v1/chat/completions on the same origin. `?tools=1`: an agent
// over it whose get_location tool the page runs, given to useXChat with `execute`.
import { StrictMode, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { createAgent } from '../../providers/agent/createAgent';
import { defineAgentTool } from '../../providers/agent/defineAgentTool';
import { createOpenAICompatibleAgentProvider } from '../../providers/openai/createOpenAICompatibleAgentProvider';
import { useXChat } from '../../react/useXChat';

const createProvider = () =>
  createOpenAICompatibleAgentProvider({
    baseURL: `${window.location.origin}/v1/`,
    apiKey: 'sk-browser',
    model: 'gpt-4o-mini',
  });
const sharedProvider = createProvider();
const params = new URLSearchParams(window.location.search);
// `?inline=1`: a new provider object on every render, as a component body that builds it would make.
const inlineProvider = params.get('inline') === '1';

const upperCase = (message: { content: unknown }) => String(message.content).toUpperCase();

function Chat({ conversationKey }: { conversationKey?: string }) {
  const provider = inlineProvider ? createProvider() : sharedProvider;
  const { messages, parsedMessages, agentState, onRequest, abort, isRequesting } = useXChat({
    provider,
    parser: upperCase,
    ...(conversationKey === undefined ? {} : { conversationKey }),
  });
  const [prompt, setPrompt] = useState('');
  return (
    <section>
      <output id="requesting">{String(isRequesting)}</output>
      <ol id="messages">
        {messages.map(({ id, message, status }) => (
          <li key={id} data-role={message.role} data-status={status}>
            {String(message.content)}
          </li>
        ))}
      </ol>
      <ol id="parsed">
        {parsedMessages.map(({ id, message }) => (
          <li key={id}>{message}</li>
        ))}
      </ol>
      <ol id="runs">
        {Object.values(agentState.runs).map((run) => (
          <li key={run.id} data-status={run.status}>
            {run.sessionId}
          </li>
        ))}
      </ol>
      <output id="issues">{agentState.issues.length}</output>
      <input id="prompt" value={prompt} onChange={(event) => setPrompt(event.target.value)} />
      <button
        id="send"
        type="button"
        onClick={() => {
          void onRequest({ messages: [{ role: 'user', content: prompt }] });
          setPrompt('');
        }}
      >
        Send
      </button>
      <button id="stop" type="button" onClick={abort}>
        Stop
      </button>
    </section>
  );
}

/** The tool as the agent knows it: no `execute`, so the run waits for the page to run it. */
const location = {
  name: 'get_location',
  description: 'Where the user is',
  inputSchema: {
    type: 'object',
    properties: { precision: { type: 'string', enum: ['city', 'country'] } },
    required: ['precision'],
  },
};
const agent = createAgent({ model: sharedProvider, tools: [defineAgentTool(location)] });

function ToolChat() {
  const [prompt, setPrompt] = useState('');
  // Made in the render, as a tool whose execute reads the component's props or state would be.
  const getLocation = defineAgentTool({
    ...location,
    execute: (input) => ({ host: window.location.host, precision: (input as { precision: string }).precision }),
  });
  const { messages, agentState, onRequest, chat } = useXChat({ provider: agent, tools: [getLocation] });
  return (
    <section>
      <ol id="messages">
        {messages.map(({ id, message, status }) => (
          <li key={id} data-role={message.role} data-status={status}>
            {String(message.content)}
          </li>
        ))}
      </ol>
      <ol id="tool-calls">
        {Object.values(agentState.toolCalls).map((toolCall) => (
          <li key={`${toolCall.runId}:${toolCall.id}`} data-status={toolCall.status}>
            {`${toolCall.name}: ${chat.tools.get(toolCall.name)?.description}`}
          </li>
        ))}
      </ol>
      <ol id="runs">
        {Object.values(agentState.runs).map((run) => (
          <li key={run.id} data-status={run.status}>
            {run.continuesRunId === undefined ? 'request' : 'continuation'}
          </li>
        ))}
      </ol>
      <output id="issues">{agentState.issues.length}</output>
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
    </section>
  );
}

function App() {
  const [open, setOpen] = useState(true);
  const conversationKey = params.get('conversation') ?? undefined;
  if (params.get('tools') === '1') return <ToolChat />;
  return (
    <main>
      <button id="toggle" type="button" onClick={() => setOpen(!open)}>
        {open ? 'Close chat' : 'Open chat'}
      </button>
      {open ? <Chat {...(conversationKey === undefined ? {} : { conversationKey })} /> : null}
    </main>
  );
}

const root = document.getElementById('root');
if (root === null) throw new Error('no #root element');
// StrictMode mounts, unmounts and mounts again: the hook must survive it.
createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
