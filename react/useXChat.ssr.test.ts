// useXChat rendered on a server (no document), as an SSR framework renders each request.
import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';
import {
  createXChatConversations,
  getPageXChatConversations,
  type XChatConversations,
} from '../runtime/xChatConversations';
import { useXChat } from './useXChat';

const provider = createLocalAgentProvider({
  script: (input) => ({ steps: [{ type: 'text', deltas: [`You said ${input.prompt}`] }] }),
});

function Chat({ conversations }: { conversations?: XChatConversations }) {
  const { messages } = useXChat({
    provider,
    conversationKey: 'support',
    ...(conversations === undefined ? {} : { conversations }),
  });
  return createElement(
    'ol',
    null,
    messages.map(({ id, message }) => createElement('li', { key: id }, String(message.content))),
  );
}

describe('useXChat on a server', () => {
  it("renders the conversation of the request's own registry, and no other request's", async () => {
    const aliceRequest = createXChatConversations();
    await aliceRequest.get('support', provider).request({ prompt: 'my order is 42' });

    expect(renderToString(createElement(Chat, { conversations: aliceRequest }))).toBe(
      '<ol><li>my order is 42</li><li>You said my order is 42</li></ol>',
    );
    expect(renderToString(createElement(Chat, { conversations: createXChatConversations() }))).toBe('<ol></ol>');
  });

  it('without a registry, a keyed chat gets a conversation of its own: no registry outlives the request', () => {
    expect(renderToString(createElement(Chat))).toBe('<ol></ol>');
    expect(renderToString(createElement(Chat))).toBe('<ol></ol>');
    expect(getPageXChatConversations()).toBeUndefined();
  });
});
