import { Empty, Tag, Timeline, Typography } from 'antd';
import type { AgentRunState, AgentState } from '../../../machines/agentState';
import { type AgentTimelineItem, selectAgentTimeline } from '../../../machines/selectors';

const RUN_COLOR: Record<AgentRunState['status'], string> = {
  running: 'blue',
  completed: 'green',
  failed: 'red',
  cancelled: 'default',
};

function labelOf(item: AgentTimelineItem): string {
  switch (item.kind) {
    case 'message': {
      const text = typeof item.entity.content === 'string' ? item.entity.content : '[parts]';
      return `${item.entity.role}: ${text.length > 48 ? `${text.slice(0, 48)}…` : text}`;
    }
    case 'reasoning':
      return 'reasoning';
    case 'toolCall':
      return `${item.entity.name} (attempt ${item.entity.attempt})`;
    case 'approval':
      return `${item.entity.description ?? 'approval'}${item.entity.decision ? ` → ${item.entity.decision}` : ''}`;
    case 'task':
      return item.entity.title ?? 'task';
    case 'artifact':
      return `${item.entity.title ?? 'artifact'} v${item.entity.version}`;
  }
}

/** Each run with its status and what it did, in arrival order (`selectAgentTimeline`). */
export function TimelinePanel({ agentState }: { agentState: AgentState }) {
  const runs = Object.values(agentState.runs);
  if (runs.length === 0) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="No runs yet" />;
  return (
    <div>
      {runs.map((run) => (
        <div key={run.id} data-testid="run" data-status={run.status} style={{ marginBottom: 12 }}>
          <Typography.Text strong>Run {run.id.slice(0, 8)}</Typography.Text>{' '}
          <Tag color={RUN_COLOR[run.status]}>{run.status}</Tag>
          {run.continuesRunId === undefined ? null : <Tag>continues {run.continuesRunId.slice(0, 8)}</Tag>}
          {run.error === undefined ? null : <Typography.Text type="danger">{run.error.message}</Typography.Text>}
          <Timeline
            style={{ marginTop: 8 }}
            items={selectAgentTimeline(agentState, { runId: run.id, includeReasoning: true }).map((item) => ({
              key: item.key,
              content: (
                <span>
                  <Typography.Text type="secondary">{item.kind}</Typography.Text> {labelOf(item)}{' '}
                  <Tag variant="filled">{item.entity.status}</Tag>
                </span>
              ),
            }))}
          />
        </div>
      ))}
    </div>
  );
}
