import { ThoughtChain, type ThoughtChainItemType } from '@ant-design/x';
import { Button, Empty, Tag, Typography } from 'antd';
import { memo } from 'react';
import type { AgentState, AgentToolCallState } from '../../../machines/agentState';
import { useXChatToolCall } from '../../../react/useXChatSelector';
import type { AgentActions } from '../../../runtime/createXChatRuntime';
import type { XChatSource } from '../../../runtime/createXChatSource';
import { isRunByThisPage } from './clientTools';
import { commandOf, type DemoCommands } from './commandStatus';
import type { DemoInput } from './demoProviders';

const STATUS: Record<AgentToolCallState['status'], NonNullable<ThoughtChainItemType['status']>> = {
  streaming_arguments: 'loading',
  awaiting_execution: 'loading',
  running: 'loading',
  completed: 'success',
  failed: 'error',
  cancelled: 'abort',
};

function describe(state: AgentState, call: AgentToolCallState): string {
  const attempt = call.attempt > 1 ? ` · attempt ${call.attempt}` : '';
  const where = call.status === 'awaiting_execution' && isRunByThisPage(state, call) ? ' · run by this page' : '';
  return `${call.status.replace('_', ' ')}${attempt}${where}`;
}

interface ToolCallDetailsProps {
  chat: XChatSource<DemoInput>;
  runId: string;
  toolCallId: string;
}

/**
 * A card's arguments, result and error, subscribed to that one tool call: while a call's
 * arguments stream, only its own details render again.
 */
const ToolCallDetails = memo(function ToolCallDetails({ chat, runId, toolCallId }: ToolCallDetailsProps) {
  const call = useXChatToolCall(chat, { runId, toolCallId });
  if (call === undefined) return null;
  return (
    <div>
      <Typography.Text type="secondary">Arguments</Typography.Text>
      <pre className="demo-code">{call.arguments || ' '}</pre>
      {call.result === undefined ? null : (
        <>
          <Typography.Text type="secondary">Result</Typography.Text>
          <pre className="demo-code">{JSON.stringify(call.result, null, 2)}</pre>
        </>
      )}
      {call.error === undefined ? null : (
        <Typography.Text type="danger">
          {call.error.message}
          {call.error.code === undefined ? '' : ` (${call.error.code})`}
        </Typography.Text>
      )}
    </div>
  );
});

export interface ToolCallsPanelProps {
  agentState: AgentState;
  /** The chat's source (`useXChat().chat`), which each card's details subscribe to. */
  chat: XChatSource<DemoInput>;
  agentActions: AgentActions;
  commands: DemoCommands;
  onError: (error: unknown) => void;
}

/** Every tool call: arguments as they stream, the result or the error, Retry on a retryable failure. */
export function ToolCallsPanel({ agentState, chat, agentActions, commands, onError }: ToolCallsPanelProps) {
  // Newest first: what needs a click is at the top.
  const calls = Object.values(agentState.toolCalls).reverse();
  if (calls.length === 0) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="No tool calls yet" />;
  const items: ThoughtChainItemType[] = calls.map((call) => {
    const run = agentState.runs[call.runId];
    const retryable = call.status === 'failed' && call.error?.retryable === true && call.retriedBy === undefined;
    const retrying = commandOf(commands, { runId: call.runId, type: 'tool.retry', entityId: call.id });
    return {
      key: call.key,
      title: (
        <span data-testid="tool-call" data-status={call.status}>
          <Typography.Text code>{call.name}</Typography.Text>
          {call.retryOf === undefined ? null : <Tag style={{ marginLeft: 8 }}>retry of {call.retryOf}</Tag>}
        </span>
      ),
      description: describe(agentState, call),
      status: STATUS[call.status],
      content: <ToolCallDetails chat={chat} runId={call.runId} toolCallId={call.id} />,
      footer: retryable ? (
        <Button
          size="small"
          type="primary"
          danger
          disabled={run?.status !== 'running'}
          loading={retrying?.status === 'submitting'}
          onClick={() => agentActions.retryTool({ runId: call.runId, toolCallId: call.id }).catch(onError)}
        >
          Retry
        </Button>
      ) : undefined,
    };
  });
  return <ThoughtChain items={items} line="dashed" />;
}
