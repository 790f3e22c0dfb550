import { Bubble, type BubbleItemType, Prompts, Sender } from '@ant-design/x';
import { Alert, Avatar, Button, Flex, Typography } from 'antd';
import { useState } from 'react';
import type { AgentRunState, AgentState } from '../../../machines/agentState';
import type { XChatParsedMessage } from '../../../runtime/parseXChatMessages';
import type { DemoBubble } from './messageText';
import { RunActivity, runActivityItems } from './RunActivity';

export interface ConversationPanelProps {
  parsedMessages: XChatParsedMessage<DemoBubble>[];
  agentState: AgentState;
  isRequesting: boolean;
  runningRun: AgentRunState | undefined;
  /** Runs left `running` that nothing will end: the page reloaded mid-run and they cannot be resumed. */
  strandedRunIds: readonly string[];
  cancelling: boolean;
  /** The one error to show, in words; above the thread, which gives it room. */
  error: string | undefined;
  onDismissError: () => void;
  /**
   * The prompts the provider answers; `recorded`: it replays a recording whatever is asked;
   * `scripted`: a scripted model answers, whatever is asked.
   */
  scenario: { recorded: boolean; scripted: boolean; prompts: string[] };
  onSend: (prompt: string) => void;
  /** Starts again what a stranded run was asked: a new request with its input. */
  onStartAgain: (runId: string) => void;
  onStop: () => void;
  onCancelRun: (runId: string) => void;
}

const ROLES = {
  ai: { placement: 'start' as const, avatar: <Avatar style={{ background: '#1677ff' }}>AI</Avatar> },
  user: { placement: 'end' as const, avatar: <Avatar>You</Avatar> },
};

/**
 * The thread: the bubbles, and after each run's messages what it did (tool calls, approvals,
 * how it ended), in words. A stranded run gets Start again.
 */
function threadItems(props: ConversationPanelProps): BubbleItemType[] {
  const items: BubbleItemType[] = [];
  const activityOf = (runId: string) => {
    const stranded = props.strandedRunIds.includes(runId);
    const activity = runActivityItems(props.agentState, runId, stranded);
    if (activity.length === 0) return;
    items.push({
      key: `activity:${runId}`,
      role: 'ai',
      content: runId,
      contentRender: () => (
        <div>
          <RunActivity items={activity} runId={runId} />
          {stranded ? (
            <Button data-testid="start-again" type="primary" size="small" onClick={() => props.onStartAgain(runId)}>
              Start again
            </Button>
          ) : null}
        </div>
      ),
    });
  };
  props.parsedMessages.forEach(({ id, message, status }, index) => {
    items.push({
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
    });
    if (props.parsedMessages[index + 1]?.message.runId !== message.runId) activityOf(message.runId);
  });
  return items;
}

/** The conversation: the thread, the one error, the scenario's prompts, the Sender (Stop = `abort`), and Cancel run. */
export function ConversationPanel(props: ConversationPanelProps) {
  const [draft, setDraft] = useState('');
  const items = threadItems(props);
  const { scenario } = props;
  return (
    <Flex vertical style={{ height: '100%', minHeight: 0 }}>
      {props.error === undefined ? null : (
        <Alert
          data-testid="error"
          type="error"
          showIcon
          closable={{ onClose: props.onDismissError }}
          title={props.error}
          style={{ margin: '12px 24px 0', flex: 'none' }}
        />
      )}
      <div style={{ flex: 1, minHeight: 0, padding: '16px 24px', overflow: 'auto' }}>
        {items.length === 0 ? (
          <Flex vertical align="center" justify="center" style={{ height: '100%' }}>
            <Typography.Title level={4}>Ask the agent something</Typography.Title>
            <Typography.Text type="secondary">Pick a prompt below, or write your own.</Typography.Text>
          </Flex>
        ) : (
          <Bubble.List items={items} role={ROLES} style={{ height: '100%' }} />
        )}
      </div>
      <div style={{ padding: '8px 24px 24px', flex: 'none' }}>
        <div data-testid="scenario" data-recorded={String(scenario.recorded)} style={{ marginBottom: 8 }}>
          <Typography.Text type="secondary" data-testid="scenario-note">
            {scenario.recorded
              ? 'Recorded scenario: this provider replays a recording, whatever you ask. It answers:'
              : scenario.scripted
                ? 'Scripted scenario: a scripted model plays its script, whatever you ask. It answers:'
                : 'Try:'}
          </Typography.Text>
          <Prompts
            wrap
            items={scenario.prompts.map((prompt) => ({ key: prompt, description: prompt }))}
            onItemClick={({ data }) => {
              if (!props.isRequesting) props.onSend(String(data.key));
            }}
            styles={{ item: { padding: '4px 8px' } }}
          />
        </div>
        <Sender
          value={draft}
          onChange={setDraft}
          loading={props.isRequesting}
          placeholder={
            scenario.recorded || scenario.scripted ? 'Message the agent (it answers its scenario)' : 'Message the agent'
          }
          onSubmit={(prompt) => {
            if (prompt.trim() === '') return;
            props.onSend(prompt);
            setDraft('');
          }}
          onCancel={props.onStop}
          footer={() => (
            <Flex justify="space-between" align="center" gap={8}>
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
