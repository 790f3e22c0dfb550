import { Think } from '@ant-design/x';
import { Empty, Space } from 'antd';
import type { AgentState } from '../../../machines/agentState';
import { selectVisibleReasoning } from '../../../machines/selectors';

/** The model's reasoning, one Think block per reasoning record; redacted reasoning shows no content. */
export function ReasoningPanel({ agentState }: { agentState: AgentState }) {
  const reasoning = Object.values(agentState.reasoning).map(selectVisibleReasoning);
  if (reasoning.length === 0) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="No reasoning yet" />;
  return (
    <Space orientation="vertical" style={{ width: '100%' }}>
      {reasoning.map((item) => (
        <Think
          key={item.key}
          data-testid="reasoning"
          title={item.status === 'streaming' ? 'Thinking…' : 'Thought'}
          loading={item.status === 'streaming'}
          blink={item.status === 'streaming'}
          defaultExpanded
        >
          {item.content ?? '(redacted by the model)'}
        </Think>
      ))}
    </Space>
  );
}
