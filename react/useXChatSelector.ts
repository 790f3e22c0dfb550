import { useSelector } from '@xstate/react';
import { useCallback, useSyncExternalStore } from 'react';
import type { AgentApprovalState, AgentToolCallState } from '../machines/agentState';
import { type AgentMessageInfo, selectApproval, selectToolCall } from '../machines/selectors';
import type { XChatSource, XChatView } from '../runtime/createXChatSource';
import { findXChatMessage } from '../runtime/xChatMessageIndex';

/**
 * Reads one value of a chat's view (`useXChat().chat`) and re-renders only when it changes
 * (`Object.is`, or `compare`). The selector may be a new function each render. The
 * library's selectors (`selectRunningRuns`, `selectPendingInput`, `selectAgentTimeline`,
 * ...) answer with the same array or object while what they read is unchanged, so they
 * need no `compare`: a token streamed into a message does not render a list of running runs.
 *
 * @example
 * const running = useXChatSelector(chat, (view) => view.isRequesting);
 * const runs = useXChatSelector(chat, (view) => selectRunningRuns(view.agentState, chat.runtime.sessionId));
 */
export function useXChatSelector<Input, Selected>(
  chat: XChatSource<Input>,
  selector: (view: XChatView) => Selected,
  compare?: (previous: Selected, next: Selected) => boolean,
): Selected {
  return useSelector(chat, selector, compare);
}

/** The shown message with this id (`messages[i].id`), or `undefined`: for a message component of a list. */
export function selectXChatMessage(view: XChatView, messageKey: string): AgentMessageInfo | undefined {
  return findXChatMessage(view.messages, messageKey);
}

/**
 * One shown message, re-rendering only when that message changes: a token streamed into
 * another message does not render this one, nor does it run this hook's subscription
 * (`chat.subscribeMessage`), so a flush costs the same beside 10 or 1,000 bubbles.
 *
 * @example
 * function Bubble({ chat, id }) {
 *   const info = useXChatMessage(chat, id);
 *   return <p>{String(info?.message.content)}</p>;
 * }
 */
export function useXChatMessage<Input>(chat: XChatSource<Input>, messageKey: string): AgentMessageInfo | undefined {
  const subscribe = useCallback(
    (listener: () => void) => chat.subscribeMessage(messageKey, listener),
    [chat, messageKey],
  );
  const read = () => selectXChatMessage(chat.getSnapshot(), messageKey);
  return useSyncExternalStore(subscribe, read, read);
}

/** One tool call of one run, re-rendering only when that record changes (its arguments stream, its status moves). */
export function useXChatToolCall<Input>(
  chat: XChatSource<Input>,
  target: { runId: string; toolCallId: string },
): AgentToolCallState | undefined {
  const { runId, toolCallId } = target;
  return useSelector(chat, (view) => selectToolCall(view.agentState, { runId, toolCallId }));
}

/** One approval of one run, re-rendering only when that record changes. */
export function useXChatApproval<Input>(
  chat: XChatSource<Input>,
  target: { runId: string; approvalId: string },
): AgentApprovalState | undefined {
  const { runId, approvalId } = target;
  return useSelector(chat, (view) => selectApproval(view.agentState, { runId, approvalId }));
}
