import { ThoughtChain, type ThoughtChainItemType } from '@ant-design/x';
import { Button, Empty, Tag, Typography } from 'antd';
import type { AgentState, AgentToolCallState } from '../../../machines/agentState';
import type { AgentActions } from '../../../runtime/createXChatRuntime';
import { CLIENT_TOOLS } from './clientTools';
import { commandOf, type DemoCommands } from './commandStatus';

const STATUS: Record<AgentToolCallState['status'], NonNullable<ThoughtChainItemType['status']>> = {
  streaming_arguments: 'loading',
  awaiting_execution: 'loading',
  running: 'loading',
  completed: 'success',
  failed: 'error',
  cancelled: 'abort',
};

function describe(call: AgentToolCallState): string {
  const attempt = call.attempt > 1 ? ` · attempt ${call.attempt}` : '';
  const where = call.status === 'awaiting_execution' && CLIENT_TOOLS[call.name] ? ' · run by this page' : '';
  return `${call.status.replace('_', ' ')}${attempt}${where}`;
}

export interface ToolCallsPanelProps {
  agentState: AgentState;
  agentActions: AgentActions;
  commands: DemoCommands;
  onError: (error: unknown) => void;
}

/** Every tool call: arguments as they stream, the result or the error, Retry on a retryable failure. */
export function ToolCallsPanel({ agentState, agentActions, commands, onError }: ToolCallsPanelProps) {
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
      description: describe(call),
      status: STATUS[call.status],
      content: (
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
      ),
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
