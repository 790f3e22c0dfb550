import type { InspectionEvent } from 'xstate';
import type { XChatSnapshot } from '../../../runtime/xChatSnapshot';

/** What the inspector is shown of a chat view: its statuses and sizes, not the whole AgentState. */
export interface InspectedXChatView {
  isRequesting: boolean;
  connectionState: string;
  messages: number;
  runs: number;
  commands: number;
  issues: number;
  error: boolean;
}

function isXChatView(value: unknown): value is XChatSnapshot {
  return typeof value === 'object' && value !== null && 'agentState' in value && 'connectionState' in value;
}

/** A chat view as the inspector is shown it: sent whole, every change would copy the AgentState into its window. */
export function summarizeXChatView(view: XChatSnapshot): InspectedXChatView {
  return {
    isRequesting: view.isRequesting,
    connectionState: view.connectionState,
    messages: view.messages.length,
    runs: Object.keys(view.agentState.runs).length,
    commands: Object.keys(view.commandStates).length,
    issues: view.agentState.issues.length,
    error: view.error !== undefined,
  };
}

/** The runtime's context and its `view.changed` events carry a chat view: the inspector gets its summary. */
function withSummarizedView<Value extends object>(value: Value): Value {
  if (!('view' in value) || !isXChatView(value.view)) return value;
  return { ...value, view: summarizeXChatView(value.view) };
}

/**
 * With `?inspect` in the page's address, the Stately inspector (`@statelyai/inspect`, which
 * opens its own window) as an `inspect` observer; otherwise undefined. Imported on demand, so
 * the page loads without it when nobody asked.
 */
export async function loadStatelyInspector(search: string): Promise<((event: InspectionEvent) => void) | undefined> {
  if (!new URLSearchParams(search).has('inspect')) return undefined;
  const { createBrowserInspector } = await import('@statelyai/inspect');
  const inspector = createBrowserInspector({
    sanitizeContext: withSummarizedView,
    sanitizeEvent: withSummarizedView,
  });
  return (event) => inspector.inspect.next?.(event);
}
