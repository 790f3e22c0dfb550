import { XProvider } from '@ant-design/x';
import { Alert, App as AntApp, Badge, Button, Card, Flex, Layout, Segmented, Tag, Typography } from 'antd';
import { useCallback, useEffect, useMemo, useState } from 'react';
import type { InspectionEvent } from 'xstate';
import { createWebStorageAgentCheckpointStorage } from '../../../checkpoint/createWebStorageAgentCheckpointStorage';
import { useXChat } from '../../../react/useXChat';
import type { AgentConnectionState } from '../../../runtime/connectionMachine';
import { ApprovalsPanel } from './ApprovalsPanel';
import { ArtifactsPanel } from './ArtifactsPanel';
import { ConversationPanel } from './ConversationPanel';
import { useClientTools } from './clientTools';
import { commandOf } from './commandStatus';
import {
  createDemoProviders,
  DEMO_CONVERSATION_KEY,
  DEMO_PROVIDER_LABELS,
  type DemoProviderId,
  inputFor,
} from './demoProviders';
import { InspectorNote } from './InspectorNote';
import { LIFECYCLE_STYLES, LifecyclePanel } from './LifecyclePanel';
import { createLifecycleObserver } from './lifecycleObserver';
import { toBubbles } from './messageText';
import { ReasoningPanel } from './ReasoningPanel';
import { TasksPanel } from './TasksPanel';
import { TimelinePanel } from './TimelinePanel';
import { ToolCallsPanel } from './ToolCallsPanel';

// Also the session of the server's agentstate host: the host provider's runs are this conversation's.
const CONVERSATION_KEY = DEMO_CONVERSATION_KEY;
const PROVIDER_KEY = 'agentstate-demo:provider';
const checkpointStorage = createWebStorageAgentCheckpointStorage(localStorage);
const providers = createDemoProviders(window.location.origin, CONVERSATION_KEY);
const providerIds = Object.keys(DEMO_PROVIDER_LABELS) as DemoProviderId[];
const lifecycles = createLifecycleObserver();

function savedProvider(): DemoProviderId {
  const saved = localStorage.getItem(PROVIDER_KEY);
  return providerIds.find((id) => id === saved) ?? 'local';
}

const CONNECTION_COLOR: Record<AgentConnectionState, string> = {
  idle: 'default',
  restoring: 'processing',
  connecting: 'processing',
  connected: 'success',
  reconnecting: 'warning',
  unrecoverable: 'error',
  failed: 'error',
};

function Panel({ title, count, children }: { title: string; count?: number; children: React.ReactNode }) {
  return (
    <Card
      size="small"
      title={
        <Flex gap={8} align="center">
          {title}
          {count === undefined || count === 0 ? null : <Badge count={count} color="#1677ff" />}
        </Flex>
      }
      style={{ marginBottom: 12 }}
    >
      {children}
    </Card>
  );
}

type Inspect = (event: InspectionEvent) => void;

function Demo({ statelyInspect }: { statelyInspect: Inspect | undefined }) {
  const { message } = AntApp.useApp();
  // Made once: the conversation reads `inspect` when it is made.
  const [inspect] = useState<Inspect>(() =>
    statelyInspect === undefined
      ? lifecycles.inspect
      : (event: InspectionEvent) => {
          lifecycles.inspect(event);
          statelyInspect(event);
        },
  );
  const [providerId, setProviderId] = useState<DemoProviderId>(savedProvider);
  const [config, setConfig] = useState<Record<string, string>>({});
  useEffect(() => {
    fetch('/api/config')
      .then((response) => response.json())
      .then(setConfig, () => {});
  }, []);
  // Only the provider object changes with the switcher; the hook, and the conversation, stay.
  const chat = useXChat({
    provider: providers[providerId],
    conversationKey: CONVERSATION_KEY,
    checkpointStorage,
    parser: toBubbles,
    inspect,
  });
  const { agentState, agentActions } = chat;
  const onError = useCallback((error: unknown) => void message.error(String(error)), [message]);
  useClientTools(agentState, agentActions, onError);

  const runningRun = useMemo(
    () => Object.values(agentState.runs).find((run) => run.status === 'running'),
    [agentState.runs],
  );
  const cancelling =
    runningRun !== undefined && commandOf(chat, { runId: runningRun.id, type: 'run.cancel' })?.status === 'submitting';
  const issues = agentState.issues.length;
  const waitingApprovals = Object.values(agentState.approvals).filter((approval) => approval.status === 'waiting');

  const switchProvider = (id: DemoProviderId) => {
    localStorage.setItem(PROVIDER_KEY, id);
    setProviderId(id);
  };
  const newConversation = async () => {
    chat.abort();
    await checkpointStorage.remove(CONVERSATION_KEY);
    window.location.reload();
  };
  const liveness = providerId === 'openai' || providerId === 'anthropic' ? config[providerId] : undefined;

  return (
    <Layout style={{ height: '100%' }}>
      <Layout.Header
        style={{
          background: '#fff',
          borderBottom: '1px solid #f0f0f0',
          display: 'flex',
          alignItems: 'center',
          gap: 16,
        }}
      >
        <Typography.Title level={4} style={{ margin: 0, whiteSpace: 'nowrap' }}>
          agentstate
        </Typography.Title>
        <Segmented
          data-testid="provider-switcher"
          value={providerId}
          onChange={(value) => switchProvider(value as DemoProviderId)}
          options={providerIds.map((id) => ({ value: id, label: DEMO_PROVIDER_LABELS[id] }))}
        />
        {liveness === undefined ? null : <Tag color={liveness === 'live' ? 'green' : 'default'}>{liveness}</Tag>}
        <Flex gap={8} align="center" style={{ marginLeft: 'auto' }}>
          <Tag data-testid="connection" color={CONNECTION_COLOR[chat.connectionState]}>
            {chat.connectionState}
          </Tag>
          <Tag data-testid="issues" color={issues === 0 ? 'green' : 'red'}>
            {issues} {issues === 1 ? 'issue' : 'issues'}
          </Tag>
          <Button onClick={newConversation}>New conversation</Button>
        </Flex>
      </Layout.Header>
      <Layout hasSider>
        <Layout.Content style={{ background: '#fff', minWidth: 0 }}>
          {chat.error === undefined ? null : (
            <Alert type="error" showIcon title={chat.error.message} style={{ margin: '12px 24px 0' }} />
          )}
          <InspectorNote search={window.location.search} />
          <ConversationPanel
            parsedMessages={chat.parsedMessages}
            isRequesting={chat.isRequesting}
            runningRun={runningRun}
            cancelling={cancelling}
            onSend={(prompt) => void chat.onRequest(inputFor(providerId, prompt)).catch(onError)}
            onStop={chat.abort}
            onCancelRun={(runId) =>
              void agentActions.cancelRun({ runId, reason: 'cancelled in the demo' }).catch(onError)
            }
          />
        </Layout.Content>
        <div className="demo-side">
          <div className="demo-side-column">
            <Panel title="Approvals" count={waitingApprovals.length}>
              <ApprovalsPanel agentState={agentState} chat={chat.chat} agentActions={agentActions} onError={onError} />
            </Panel>
            <Panel title="Tool calls">
              <ToolCallsPanel
                agentState={agentState}
                chat={chat.chat}
                agentActions={agentActions}
                commands={chat}
                onError={onError}
              />
            </Panel>
            <Panel title="Tasks">
              <TasksPanel agentState={agentState} />
            </Panel>
            <Panel title="Artifacts">
              <ArtifactsPanel agentState={agentState} />
            </Panel>
          </div>
          <div className="demo-side-column">
            <Panel title="Lifecycles">
              <LifecyclePanel agentState={agentState} lifecycles={lifecycles} />
            </Panel>
            <Panel title="Reasoning">
              <ReasoningPanel agentState={agentState} />
            </Panel>
            <Panel title="Runs">
              <TimelinePanel agentState={agentState} />
            </Panel>
          </div>
        </div>
      </Layout>
    </Layout>
  );
}

/**
 * The agent's work beside the chat: two columns on a wide screen (the work, and the
 * machines), one above the other on a narrower one.
 */
const DEMO_STYLES = [
  '.demo-code{background:#f6f8fa;border-radius:6px;padding:8px;margin:4px 0;font-size:12px;white-space:pre-wrap;word-break:break-word}',
  '.demo-side{display:flex;flex-direction:column;gap:0 12px;flex:none;overflow-y:auto;padding:12px;background:#fafafa;border-left:1px solid #f0f0f0}',
  '.demo-side-column{width:440px;min-width:0}',
  '@media (min-width:1400px){.demo-side{flex-direction:row;align-items:flex-start}.demo-side-column{width:420px}}',
].join('');

export interface DemoAppProps {
  /** The Stately inspector's observer (`?inspect`), given every inspection event besides the lifecycle panel. */
  statelyInspect?: Inspect | undefined;
}

/** The demo page: a chat on `useXChat` with the agent's work, and each entity's machine, beside it. */
export function DemoApp({ statelyInspect }: DemoAppProps) {
  return (
    <XProvider>
      <AntApp style={{ height: '100%' }}>
        <style>{DEMO_STYLES}</style>
        <style>{LIFECYCLE_STYLES}</style>
        <Demo statelyInspect={statelyInspect} />
      </AntApp>
    </XProvider>
  );
}
