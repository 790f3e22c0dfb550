import { XProvider } from '@ant-design/x';
import { App as AntApp, Badge, Button, Card, Flex, Layout, Segmented, Tag, Typography } from 'antd';
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
  DEMO_SCENARIOS,
  type DemoInput,
  type DemoProviderId,
  inputFor,
  isRecorded,
} from './demoProviders';
import { errorText } from './errorText';
import { InspectorNote } from './InspectorNote';
import { LIFECYCLE_STYLES, LifecyclePanel } from './LifecyclePanel';
import { createLifecycleObserver } from './lifecycleObserver';
import { toBubbles } from './messageText';
import { ReasoningPanel } from './ReasoningPanel';
import { TasksPanel } from './TasksPanel';
import { TimelinePanel } from './TimelinePanel';
import { ToolCallsPanel } from './ToolCallsPanel';

// Also the session of the server's agent-machines host: the host provider's runs are this conversation's.
const CONVERSATION_KEY = DEMO_CONVERSATION_KEY;
const PROVIDER_KEY = 'agent-machines-demo:provider';
const checkpointStorage = createWebStorageAgentCheckpointStorage(localStorage);
const providers = createDemoProviders(window.location.origin, CONVERSATION_KEY);
const providerIds = Object.keys(DEMO_PROVIDER_LABELS) as DemoProviderId[];
const lifecycles = createLifecycleObserver();

/**
 * A provider's name in the switcher, marked `recorded` when it replays a recording, `scripted`
 * when a scripted model answers, and `live` when the server proxies the real service. The mark is drawn by CSS (`.demo-provider::after`),
 * so the option's text stays the provider's name.
 */
function providerLabel(id: DemoProviderId, config: Readonly<Record<string, string>>) {
  const { recorded } = DEMO_SCENARIOS[id];
  const mark = isRecorded(id, config)
    ? 'recorded'
    : recorded === 'scripted'
      ? 'scripted'
      : recorded === 'never'
        ? ''
        : 'live';
  return (
    <span className="demo-provider" data-testid="provider-option" data-provider={id} data-mark={mark}>
      {DEMO_PROVIDER_LABELS[id]}
    </span>
  );
}

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
  // The one error shown: a rejected action's, else the chat's (until dismissed), in words.
  const [actionError, setActionError] = useState<unknown>();
  const [dismissedError, setDismissedError] = useState<string>();
  const onError = useCallback((error: unknown) => setActionError(error), []);
  useClientTools(agentState, agentActions, onError);
  const chatErrorKey =
    chat.error === undefined ? undefined : `${chat.error.source}:${chat.error.code}:${chat.error.message}`;
  const shownError = actionError ?? (chatErrorKey === dismissedError ? undefined : chat.error);
  const dismissError = () => {
    setActionError(undefined);
    setDismissedError(chatErrorKey);
  };

  // Runs left `running` that nothing will end (restored, and not resumable): see `strandedRunIds`.
  // Read at each render: it changes only with a restore, which changes `connectionState` too.
  const { connectionState, chat: source } = chat;
  // biome-ignore lint/correctness/useExhaustiveDependencies: read again when the connection's state changes
  const strandedRunIds = useMemo(() => source.runtime.getSnapshot().strandedRunIds, [source, connectionState]);
  const runningRun = useMemo(
    () => Object.values(agentState.runs).find((run) => run.status === 'running' && !strandedRunIds.includes(run.id)),
    [agentState.runs, strandedRunIds],
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
  const request = (input: DemoInput) => {
    setActionError(undefined);
    void chat.onRequest(input).catch(onError);
  };
  const startAgain = (runId: string) => {
    const input = agentState.runs[runId]?.input;
    const prompt =
      typeof input === 'object' && input !== null && 'prompt' in input
        ? String(input.prompt)
        : DEMO_SCENARIOS.local.prompts[0];
    request(inputFor(providerId, prompt ?? ''));
  };

  return (
    <Layout className="demo-page">
      <Layout.Header
        style={{
          background: '#fff',
          borderBottom: '1px solid #f0f0f0',
          display: 'flex',
          alignItems: 'center',
          gap: 16,
          lineHeight: 'normal',
          padding: '0 24px',
        }}
      >
        <Typography.Title level={4} style={{ margin: 0, whiteSpace: 'nowrap' }}>
          agent-machines
        </Typography.Title>
        {/* Takes the room the rest leaves; on a narrow window it scrolls sideways instead of widening the page. */}
        <div style={{ flex: '0 1 auto', minWidth: 0, overflowX: 'auto' }}>
          <Segmented
            data-testid="provider-switcher"
            value={providerId}
            onChange={(value) => switchProvider(value as DemoProviderId)}
            options={providerIds.map((id) => ({ value: id, label: providerLabel(id, config) }))}
          />
        </div>
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
      <Layout hasSider className="demo-body">
        <Layout.Content style={{ background: '#fff', minWidth: 0 }}>
          <InspectorNote search={window.location.search} />
          <ConversationPanel
            parsedMessages={chat.parsedMessages}
            agentState={agentState}
            isRequesting={chat.isRequesting}
            runningRun={runningRun}
            strandedRunIds={strandedRunIds}
            cancelling={cancelling}
            error={shownError === undefined ? undefined : errorText(shownError)}
            onDismissError={dismissError}
            scenario={{
              recorded: isRecorded(providerId, config),
              scripted: DEMO_SCENARIOS[providerId].recorded === 'scripted',
              prompts: DEMO_SCENARIOS[providerId].prompts,
            }}
            onSend={(prompt) => request(inputFor(providerId, prompt))}
            onStartAgain={startAgain}
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
  ".demo-provider[data-mark='recorded']::after,.demo-provider[data-mark='scripted']::after,.demo-provider[data-mark='live']::after{content:attr(data-mark);margin-left:6px;padding:0 6px;border-radius:4px;font-size:12px;background:#f0f0f0;color:#595959}",
  ".demo-provider[data-mark='live']::after{background:#f6ffed;color:#389e0d}",
  // The page fills the window; the chat and the side panel scroll on their own.
  '.demo-page{height:100%}.demo-body{min-height:0}',
  // Narrower than chat and panel side by side: the panel goes under the chat, and the page scrolls.
  '@media (max-width:1099px){.demo-page{height:auto;min-height:100%}.demo-body.ant-layout-has-sider{flex-direction:column}',
  // antd gives a layout with a sider's content `width: 0`, for a row.
  '.demo-page .demo-body.ant-layout-has-sider>.ant-layout-content{flex:none;width:auto;height:calc(100vh - 64px)}',
  '.demo-side{overflow:visible;border-left:none;border-top:1px solid #f0f0f0}.demo-side-column{width:auto}}',
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
