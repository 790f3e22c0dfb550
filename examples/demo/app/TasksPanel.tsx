import { Empty, Flex, Progress, Typography } from 'antd';
import type { AgentState, AgentTaskState } from '../../../machines/agentState';

const PROGRESS_STATUS: Record<AgentTaskState['status'], 'active' | 'success' | 'exception' | 'normal'> = {
  running: 'active',
  completed: 'success',
  failed: 'exception',
  cancelled: 'normal',
};

/** Tasks (AG-UI steps become tasks too) with their progress. */
export function TasksPanel({ agentState }: { agentState: AgentState }) {
  const tasks = Object.values(agentState.tasks);
  if (tasks.length === 0) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="No tasks yet" />;
  return (
    <Flex vertical gap={8}>
      {tasks.map((task) => (
        <div key={task.key} data-testid="task" data-status={task.status}>
          <Typography.Text>{task.title ?? task.id}</Typography.Text>
          <Progress
            percent={Math.round((task.progress ?? (task.status === 'completed' ? 1 : 0)) * 100)}
            status={PROGRESS_STATUS[task.status]}
            size="small"
          />
        </div>
      ))}
    </Flex>
  );
}
