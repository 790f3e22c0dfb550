import type { AgentContentPart, AgentFilePart, AgentImagePart } from '../../protocol/contentSchemas';

/** A content block of a Messages API message (`text`, `image`, `document`, `tool_use`, ...). */
export type AnthropicContentBlock = Record<string, unknown> & { type: string };

const DATA_URL = /^data:([^;,]+)?(?:;[^,]*)?;base64,(.*)$/s;

/** An error for content the Messages API cannot take. */
function unsupported(part: AgentContentPart, reason: string): TypeError {
  return new TypeError(`A part of type "${part.type}" cannot be sent to the Anthropic Messages API: ${reason}`);
}

/** Where an image or file comes from, as a block `source`: base64 data (from `data` or a data URL), or a URL. */
function sourceOf(part: AgentImagePart | AgentFilePart, fallbackMediaType: string): Record<string, unknown> {
  if (part.data !== undefined)
    return { type: 'base64', media_type: part.mediaType ?? fallbackMediaType, data: String(part.data) };
  if (typeof part.url !== 'string') throw unsupported(part, 'it has neither url nor data');
  const match = DATA_URL.exec(part.url);
  if (match === null) return { type: 'url', url: part.url };
  return { type: 'base64', media_type: match[1] ?? part.mediaType ?? fallbackMediaType, data: match[2] as string };
}

/** Base64 of UTF-8 text as the text. */
function decodeText(base64: string): string {
  return new TextDecoder().decode(Uint8Array.from(atob(base64), (character) => character.charCodeAt(0)));
}

function documentOf(part: AgentFilePart): AnthropicContentBlock {
  let source = sourceOf(part, 'application/pdf');
  // The API reads plain text documents as text, not base64.
  if (source.type === 'base64' && String(source.media_type).startsWith('text/'))
    source = { type: 'text', media_type: 'text/plain', data: decodeText(String(source.data)) };
  const block: AnthropicContentBlock = { type: 'document', source };
  if (part.name !== undefined) block.title = part.name;
  return block;
}

/** One part as blocks: none for what has no place in a message (empty text, a tool result), else one. */
function toAnthropicBlocks(part: AgentContentPart): AnthropicContentBlock[] {
  switch (part.type) {
    case 'text': {
      const { text } = part as { text: string };
      // The API refuses empty text blocks.
      return text === '' ? [] : [{ type: 'text', text }];
    }
    case 'image':
      return [{ type: 'image', source: sourceOf(part as AgentImagePart, 'image/png') }];
    case 'file':
      return [documentOf(part as AgentFilePart)];
    default: {
      const { data } = part as { data?: unknown };
      if (part.type.startsWith('anthropic.') && typeof data === 'object' && data !== null) {
        // A tool result goes with the call it answers, which the conversation holds as a tool call.
        if (part.type === 'anthropic.tool_result') return [];
        return [data as AnthropicContentBlock];
      }
      throw unsupported(part, 'it is neither text, an image, a file, nor an anthropic.* block');
    }
  }
}

/**
 * Our message content as Messages API blocks: text as `text` blocks (empty text left out),
 * images as `image` and files as `document` blocks (base64 from `data` or a data URL, or a
 * URL source; `text/*` files as text documents), and `anthropic.*` parts as the blocks they
 * hold. A tool result part is left out: the conversation sends it with its tool call.
 * Throws a `TypeError` for a part the API cannot take.
 *
 * @example
 * toAnthropicContent([{ type: 'text', text: 'What is this?' }, { type: 'image', data: 'iVBOR...', mediaType: 'image/png' }]);
 * // [{ type: 'text', text: 'What is this?' },
 * //  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR...' } }]
 */
export function toAnthropicContent(content: string | readonly AgentContentPart[]): AnthropicContentBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return content.flatMap(toAnthropicBlocks);
}
