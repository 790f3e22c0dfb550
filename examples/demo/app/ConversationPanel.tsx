import { Bubble, type BubbleItemType, Sender } from '@ant-design/x';
import { Avatar, Button, Flex, Typography } from 'antd';
import { useState } from 'react';
import type { AgentRunState } from '../../../machines/agentState';
import type { XChatParsedMessage } from '../../../react/parseXChatMessages';
import type { DemoBubble } from './messageText';

export interface ConversationPanelProps {
  parsedMessages: XChatParsedMessage<DemoBubble>[];
  isRequesting: boolean;
  runningRun: AgentRunState | undefined;
  cancelling: boolean;
  onSend: (prompt: string) => void;
  onStop: () => void;
  onCancelRun: (runId: string) => void;
}

const ROLES = {
  ai: { placement: 'start' as const, avatar: <Avatar style={{ background: '#1677ff' }}>AI</Avatar> },
  user: { placement: 'end' as const, avatar: <Avatar>You</Avatar> },
};

/** The conversation: bubbles from `parsedMessages`, the Sender (Stop = `abort`), and Cancel run. */
export function ConversationPanel(props: ConversationPanelProps) {
  const [draft, setDraft] = useState('');
  const items: BubbleItemType[] = props.parsedMessages.map(({ id, message, status }) => ({
    key: id,
    role: message.role,
    status,
    content: message.text,
    loading: status === 'loading',
    contentRender: (text: string) => (
      <span data-testid="bubble" data-role={message.role} data-status={status}>
        {text}
        {status === 'abort' ? <Typography.Text type="secondary"> (stopped)</Typography.Text> : null}
        {status === 'error' ? <Typography.Text type="danger"> (failed)</Typography.Text> : null}
      </span>
    ),
  }));
  return (
    <Flex vertical style={{ height: '100%' }}>
      <div style={{ flex: 1, minHeight: 0, padding: '16px 24px' }}>
        {items.length === 0 ? (
          <Flex vertical align="center" justify="center" style={{ height: '100%' }}>
            <Typography.Title level={4}>Ask the agent something</Typography.Title>
            <Typography.Text type="secondary">
              Try “What is the weather in Paris and Rome? Email it to the team.”
            </Typography.Text>
          </Flex>
        ) : (
          <Bubble.List items={items} role={ROLES} style={{ height: '100%' }} />
        )}
      </div>
      <div style={{ padding: '8px 24px 24px' }}>
        <Sender
          value={draft}
          onChange={setDraft}
          loading={props.isRequesting}
          placeholder="Message the agent"
          onSubmit={(prompt) => {
            if (prompt.trim() === '') return;
            props.onSend(prompt);
            setDraft('');
          }}
          onCancel={props.onStop}
          footer={() => (
            <Flex justify="space-between" align="center">
              <Typography.Text type="secondary">
                {props.isRequesting ? 'Stop drops the stream here; Cancel run asks the agent.' : 'Enter sends.'}
              </Typography.Text>
              <Button
                size="small"
                danger
                disabled={props.runningRun === undefined}
                loading={props.cancelling}
                onClick={() => props.runningRun && props.onCancelRun(props.runningRun.id)}
              >
                Cancel run
              </Button>
            </Flex>
          )}
        />
      </div>
    </Flex>
  );
}
