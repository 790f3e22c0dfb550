import { createPartialJsonParser, type PartialJsonParser } from '../protocol/createPartialJsonParser';
import type { AgentToolCallState } from './agentState';

export interface ToolCallArgumentsPreview {
  /**
   * The arguments of a tool call parsed as far as they have streamed. While they stream,
   * each call reads only the text added since the last call; once complete, it is the
   * tool call's `parsedArguments`.
   */
  read(toolCall: AgentToolCallState): unknown;
}

/**
 * Progressive previews of streaming tool-call arguments, for UIs that show a call's
 * arguments while the model writes them. Total parsing cost is linear in the argument
 * length, however often it is read.
 *
 * @example
 * const preview = createToolCallArgumentsPreview();
 * function ToolCard({ toolCall }) {
 *   const args = preview.read(toolCall) as { city?: string } | undefined;
 *   return <p>Looking up {args?.city ?? '…'}</p>;
 * }
 */
export function createToolCallArgumentsPreview(): ToolCallArgumentsPreview {
  const parsers = new Map<string, { parser: PartialJsonParser; consumed: number }>();
  return {
    read(toolCall) {
      if (toolCall.status !== 'streaming_arguments') {
        parsers.delete(toolCall.key);
        return toolCall.parsedArguments;
      }
      let entry = parsers.get(toolCall.key);
      // Streaming arguments only grow; a shorter text is another stream under the same key.
      if (entry === undefined || toolCall.arguments.length < entry.consumed) {
        entry = { parser: createPartialJsonParser(), consumed: 0 };
        parsers.set(toolCall.key, entry);
      }
      if (toolCall.arguments.length > entry.consumed) {
        entry.parser.feed(toolCall.arguments.slice(entry.consumed));
        entry.consumed = toolCall.arguments.length;
      }
      return entry.parser.value();
    },
  };
}
