import { Button, Card, Empty, Flex, Input, Space, Tag, Typography } from 'antd';
import { memo, useState } from 'react';
import type { AgentApprovalState, AgentState } from '../../../machines/agentState';
import { useXChatApproval, useXChatSelector } from '../../../react/useXChatSelector';
import type { AgentCommandState } from '../../../runtime/commandBook';
import type { AgentActions } from '../../../runtime/createXChatRuntime';
import type { XChatSource } from '../../../runtime/createXChatSource';
import { commandOf } from './commandStatus';
import type { DemoInput } from './demoProviders';

export interface ApprovalsPanelProps {
  agentState: AgentState;
  /** The chat's source (`useXChat().chat`): each card reads its own approval and command from it. */
  chat: XChatSource<DemoInput>;
  agentActions: AgentActions;
  onError: (error: unknown) => void;
}

type Decision = 'approved' | 'rejected' | 'modified';

interface ApprovalCardProps extends Omit<ApprovalsPanelProps, 'agentState'> {
  runId: string;
  approvalId: string;
}

/** One approval, re-rendered only when that approval or its latest command changes. */
const ApprovalCard = memo(function ApprovalCard({ chat, runId, approvalId, ...rest }: ApprovalCardProps) {
  const approval = useXChatApproval(chat, { runId, approvalId });
  const command = useXChatSelector(chat, (view) =>
    commandOf(view, { runId, type: 'approval.resolve', entityId: approvalId }),
  );
  return approval === undefined ? null : <ApprovalCardView approval={approval} command={command} {...rest} />;
});

function ApprovalCardView({
  approval,
  command,
  agentActions,
  onError,
}: {
  approval: AgentApprovalState;
  command: AgentCommandState | undefined;
} & Pick<ApprovalsPanelProps, 'agentActions' | 'onError'>) {
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState('');
  const [draftError, setDraftError] = useState<string>();
  const submitting = command?.status === 'submitting';
  const resolve = (decision: Decision, data?: unknown) => {
    const input: Parameters<AgentActions['resolveApproval']>[0] = {
      runId: approval.runId,
      approvalId: approval.id,
      decision,
    };
    if (data !== undefined) input.data = data;
    if (approval.version !== undefined) input.expectedVersion = approval.version;
    agentActions.resolveApproval(input).then(() => setEditing(false), onError);
  };
  const startEditing = () => {
    setDraft(JSON.stringify(approval.data ?? {}, null, 2));
    setDraftError(undefined);
    setEditing(true);
  };
  const approveEdited = () => {
    try {
      resolve('modified', JSON.parse(draft));
    } catch (error) {
      setDraftError(`Not JSON: ${(error as Error).message}`);
    }
  };
  const waiting = approval.status === 'waiting';
  return (
    <Card
      size="small"
      data-testid="approval"
      data-status={approval.status}
      title={approval.description ?? 'Approval'}
      extra={
        waiting ? (
          <Tag color="gold">{command?.status === 'succeeded' ? 'answered' : 'waiting'}</Tag>
        ) : (
          <Tag color={approval.decision === 'rejected' ? 'red' : 'green'}>{approval.decision ?? approval.status}</Tag>
        )
      }
    >
      <Space orientation="vertical" style={{ width: '100%' }}>
        {approval.risk === undefined ? null : <Typography.Text type="secondary">Risk: {approval.risk}</Typography.Text>}
        {approval.data === undefined ? null : (
          <pre className="demo-code">{JSON.stringify(approval.resolvedData ?? approval.data, null, 2)}</pre>
        )}
        {command?.status === 'failed' ? (
          <Typography.Text type="danger">{command.error?.message}</Typography.Text>
        ) : null}
        {waiting && editing ? (
          <>
            <Input.TextArea
              aria-label="Edited data (JSON)"
              value={draft}
              autoSize={{ minRows: 3, maxRows: 10 }}
              onChange={(event) => setDraft(event.target.value)}
              style={{ fontFamily: 'monospace' }}
            />
            {draftError === undefined ? null : <Typography.Text type="danger">{draftError}</Typography.Text>}
            <Flex gap={8}>
              <Button type="primary" loading={submitting} onClick={approveEdited}>
                Approve edited
              </Button>
              <Button onClick={() => setEditing(false)}>Back</Button>
            </Flex>
          </>
        ) : null}
        {waiting && !editing ? (
          <Flex gap={8} wrap>
            <Button type="primary" loading={submitting} onClick={() => resolve('approved')}>
              Approve
            </Button>
            <Button danger disabled={submitting} onClick={() => resolve('rejected')}>
              Reject
            </Button>
            {approval.editable === false ? null : (
              <Button disabled={submitting} onClick={startEditing}>
                Edit and approve
              </Button>
            )}
          </Flex>
        ) : null}
      </Space>
    </Card>
  );
}

/** Approvals: Approve, Reject, or edit the request's data as JSON and approve it (`modified`). */
export function ApprovalsPanel({ agentState, ...rest }: ApprovalsPanelProps) {
  // Newest first: what needs a click is at the top.
  const approvals = Object.values(agentState.approvals).reverse();
  if (approvals.length === 0) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="Nothing to approve" />;
  return (
    <Space orientation="vertical" style={{ width: '100%' }}>
      {approvals.map((approval) => (
        <ApprovalCard key={approval.key} runId={approval.runId} approvalId={approval.id} {...rest} />
      ))}
    </Space>
  );
}
