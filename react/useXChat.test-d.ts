import { describe, expectTypeOf, it } from 'vitest';
import type { AgentApprovalState, AgentMessageState, AgentToolCallState } from '../machines/agentState';
import type { AgentMessageInfo } from '../machines/selectors';
import type { AgentProvider } from '../providers/AgentProvider';
import { createLocalAgentProvider, type LocalAgentInput } from '../providers/local/createLocalAgentProvider';
import {
  createOpenAICompatibleAgentProvider,
  type OpenAIChatInput,
} from '../providers/openai/createOpenAICompatibleAgentProvider';
import type { AgentRunResult } from '../providers/runAgentProvider';
import type { XChatSource } from '../runtime/createXChatSource';
import type { XChatParsedMessage } from '../runtime/parseXChatMessages';
import type { XChatError } from '../runtime/toXChatError';
import { createXChatConversations } from '../runtime/xChatConversations';
import { useXChat } from './useXChat';
import { useXChatApproval, useXChatMessage, useXChatSelector, useXChatToolCall } from './useXChatSelector';

// Type tests are compiled, never run: calling the hook outside a component is fine here.
const openAI = createOpenAICompatibleAgentProvider({ baseURL: '/api/v1/', model: 'gpt-4o-mini' });
const local = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi'] }] } });

describe('useXChat infers the input of onRequest from its provider', () => {
  it("takes an OpenAI-compatible provider's chat input", () => {
    const { onRequest } = useXChat({ provider: openAI });
    expectTypeOf(onRequest).parameters.toEqualTypeOf<[OpenAIChatInput]>();
    expectTypeOf(onRequest).returns.toEqualTypeOf<Promise<AgentRunResult>>();
    onRequest({ messages: [{ role: 'user', content: 'Weather in Paris?' }] });
    // A prompt continues the conversation: the provider builds the messages from AgentState.
    onRequest({ prompt: 'Weather in Paris?' });
    // @ts-expect-error a tool-call id is not a field of the OpenAI chat input
    onRequest({ toolCallId: 'call-1' });
  });

  it("takes the local provider's prompt", () => {
    const { onRequest } = useXChat({ provider: local, conversationKey: 'trip-1' });
    expectTypeOf(onRequest).parameter(0).toEqualTypeOf<LocalAgentInput>();
    // @ts-expect-error OpenAI messages are not the local provider's input
    onRequest({ messages: [{ role: 'user', content: 'Hi' }] });
  });

  it("takes any provider's own input type", () => {
    interface TicketInput {
      ticketId: number;
    }
    const triage = null as unknown as AgentProvider<TicketInput, unknown, string>;
    const { onRequest } = useXChat({ provider: triage, conversations: createXChatConversations() });
    expectTypeOf(onRequest).parameter(0).toEqualTypeOf<TicketInput>();
    // @ts-expect-error the ticket id is a number
    onRequest({ ticketId: '42' });
  });
});

describe('useXChat types parsedMessages by its parser', () => {
  it('without a parser, the parsed messages are the messages', () => {
    const { messages, parsedMessages } = useXChat({ provider: local });
    expectTypeOf(messages).toEqualTypeOf<AgentMessageInfo[]>();
    expectTypeOf(parsedMessages).toEqualTypeOf<XChatParsedMessage<AgentMessageState>[]>();
  });

  it("follows the parser's return type, one item or several", () => {
    const bubbles = useXChat({
      provider: openAI,
      parser: (message) => ({ text: String(message.content), mine: message.role === 'user' }),
    });
    expectTypeOf(bubbles.parsedMessages).toEqualTypeOf<XChatParsedMessage<{ text: string; mine: boolean }>[]>();

    const lines = useXChat({ provider: local, parser: (message) => String(message.content).split('\n') });
    expectTypeOf(lines.parsedMessages).toEqualTypeOf<XChatParsedMessage<string>[]>();
  });

  it('gives the parser the message state', () => {
    useXChat({
      provider: local,
      parser: (message) => {
        expectTypeOf(message).toEqualTypeOf<AgentMessageState>();
        return message.status;
      },
    });
  });
});

describe('useXChat types its message layer, error and selector hooks', () => {
  it('returns the message-layer setters, a displayable error and the chat handle, and no second way to request', () => {
    const result = useXChat({ provider: local, defaultMessages: async () => [], throttleMs: 50 });
    // @ts-expect-error asking again, editing and resending are requests too: `onRequest`
    void result.onReload;
    expectTypeOf(result.error).toEqualTypeOf<XChatError | undefined>();
    expectTypeOf(result.chat).toEqualTypeOf<XChatSource<LocalAgentInput>>();
    result.setMessages((current) => current.filter(({ status }) => status !== 'error'));
    result.setMessage('m1', { status: 'error' });
    result.setMessage('m1', (current) => ({ status: current.status === 'local' ? 'local' : 'success' }));
    result.removeMessage('m1');
    // @ts-expect-error a patch changes the message and its status, never its id
    result.setMessage('m1', { id: 'm2' });
  });

  it('gives the selector hooks the records they select', () => {
    const { chat } = useXChat({ provider: local });
    expectTypeOf(useXChatMessage(chat, 'run-1:m1')).toEqualTypeOf<AgentMessageInfo | undefined>();
    expectTypeOf(useXChatToolCall(chat, { runId: 'run-1', toolCallId: 'tool-0' })).toEqualTypeOf<
      AgentToolCallState | undefined
    >();
    expectTypeOf(useXChatApproval(chat, { runId: 'run-1', approvalId: 'approval-1' })).toEqualTypeOf<
      AgentApprovalState | undefined
    >();
    expectTypeOf(useXChatSelector(chat, (view) => view.isRequesting)).toEqualTypeOf<boolean>();
    // @ts-expect-error a tool call is named by its run and id
    useXChatToolCall(chat, { toolCallId: 'tool-0' });
  });
});
