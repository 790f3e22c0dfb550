import { Card, Empty, Flex, Tag } from 'antd';
import type { AgentState } from '../../../machines/agentState';

/** Artifacts: their latest version's content, media type and state. */
export function ArtifactsPanel({ agentState }: { agentState: AgentState }) {
  const artifacts = Object.values(agentState.artifacts);
  if (artifacts.length === 0) return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description="No artifacts yet" />;
  return (
    <Flex vertical gap={8}>
      {artifacts.map((artifact) => (
        <Card
          key={artifact.key}
          size="small"
          data-testid="artifact"
          title={artifact.title ?? artifact.name ?? artifact.id}
          extra={
            <>
              <Tag>{artifact.mediaType ?? 'unknown type'}</Tag>
              <Tag color={artifact.status === 'completed' ? 'green' : 'blue'}>
                v{artifact.version} · {artifact.status}
              </Tag>
            </>
          }
        >
          <pre className="demo-code">{artifact.content ?? artifact.uri ?? JSON.stringify(artifact.data, null, 2)}</pre>
        </Card>
      ))}
    </Flex>
  );
}
