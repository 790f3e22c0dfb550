import type { AgentContentPart, AgentMessageContent } from '../../protocol/contentSchemas';

/** A content part of a Chat Completions message (`text`, `image_url`, `input_audio`, `file`, ...). */
export type OpenAIContentPart = Record<string, unknown> & { type: string };

const AUDIO_MEDIA_TYPES: Readonly<Record<string, string>> = { wav: 'audio/wav', mp3: 'audio/mpeg' };
const AUDIO_FORMATS: Readonly<Record<string, string>> = {
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
};

const DATA_URL = /^data:([^;,]+)?(?:;[^,]*)?;base64,(.*)$/s;

/** `data:image/png;base64,AAA` as `{ mediaType, data }`; any other URL as `{ url }`. */
function sourceOf(url: string): { url: string } | { data: string; mediaType?: string } {
  const match = DATA_URL.exec(url);
  if (match === null) return { url };
  const source: { data: string; mediaType?: string } = { data: match[2] as string };
  if (match[1] !== undefined) source.mediaType = match[1];
  return source;
}

function dataURL(data: unknown, mediaType: string | undefined, fallback: string): string {
  return `data:${mediaType ?? fallback};base64,${String(data)}`;
}

/** A namespaced part for what has no standard home: the OpenAI part, kept as it is. */
function extensionOf(part: Record<string, unknown>): AgentContentPart {
  const type = typeof part.type === 'string' && /^[^.\s]+$/.test(part.type) ? part.type : 'unknown';
  return { type: `openai.${type}`, data: part };
}

function fromOpenAIPart(part: unknown): AgentContentPart {
  if (typeof part !== 'object' || part === null) return { type: 'openai.unknown', data: part };
  const record = part as Record<string, unknown>;
  switch (record.type) {
    case 'text':
      return typeof record.text === 'string' ? { type: 'text', text: record.text } : extensionOf(record);
    case 'image_url': {
      const image = record.image_url as { url?: unknown } | undefined;
      return typeof image?.url === 'string' ? { type: 'image', ...sourceOf(image.url) } : extensionOf(record);
    }
    case 'input_audio': {
      const audio = record.input_audio as { data?: unknown; format?: unknown } | undefined;
      if (typeof audio?.data !== 'string') return extensionOf(record);
      const format = String(audio.format);
      return { type: 'file', data: audio.data, mediaType: AUDIO_MEDIA_TYPES[format] ?? `audio/${format}` };
    }
    case 'file': {
      // Our own file part (the caller's), or OpenAI's `{ file: { file_data, filename } }`.
      if (record.file === undefined) return record as AgentContentPart;
      const file = record.file as { file_data?: unknown; filename?: unknown } | null;
      if (typeof file?.file_data !== 'string') return extensionOf(record);
      const result: AgentContentPart = { type: 'file', ...sourceOf(file.file_data) };
      if (typeof file.filename === 'string') result.name = file.filename;
      return result;
    }
    case 'image':
      return record as AgentContentPart;
    default:
      if (typeof record.type === 'string' && /^[^.\s]+(\.[^.\s]+)+$/.test(record.type) && 'data' in record) {
        return record as AgentContentPart;
      }
      return extensionOf(record);
  }
}

/**
 * Chat Completions message content as ours: a string stays a string, parts stay parts
 * (`image_url` an image, `input_audio` and `file` a file, data URLs split into `data` and
 * `mediaType`, anything else an `openai.<type>` part holding the original), `null` is no content.
 *
 * @example
 * fromOpenAIContent([{ type: 'image_url', image_url: { url: 'https://x/cat.png' } }]);
 * // [{ type: 'image', url: 'https://x/cat.png' }]
 */
export function fromOpenAIContent(content: unknown): AgentMessageContent | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  return content.map(fromOpenAIPart);
}

/** An error for content the Chat Completions API cannot take. */
function unsupported(part: AgentContentPart, reason: string): TypeError {
  return new TypeError(`A ${part.type} part cannot be sent to a Chat Completions API: ${reason}`);
}

function toOpenAIPart(part: AgentContentPart | OpenAIContentPart): OpenAIContentPart {
  switch (part.type) {
    case 'image': {
      const image = part as AgentContentPart & { type: 'image' };
      if (typeof image.url === 'string') return { type: 'image_url', image_url: { url: image.url } };
      if (image.data !== undefined)
        return { type: 'image_url', image_url: { url: dataURL(image.data, image.mediaType, 'image/png') } };
      throw unsupported(part as AgentContentPart, 'it has neither url nor data');
    }
    case 'file': {
      if ('file' in part) return part as OpenAIContentPart;
      const file = part as AgentContentPart & { type: 'file' };
      const format = file.mediaType === undefined ? undefined : AUDIO_FORMATS[file.mediaType];
      if (format !== undefined && file.data !== undefined)
        return { type: 'input_audio', input_audio: { data: String(file.data), format } };
      const fileData =
        file.data !== undefined
          ? dataURL(file.data, file.mediaType, 'application/octet-stream')
          : typeof file.url === 'string' && file.url.startsWith('data:')
            ? file.url
            : undefined;
      if (fileData === undefined) throw unsupported(file, 'files go as data, not as a URL');
      const openAIFile: Record<string, unknown> = { file_data: fileData };
      if (file.name !== undefined) openAIFile.filename = file.name;
      return { type: 'file', file: openAIFile };
    }
    default:
      if (part.type.startsWith('openai.')) {
        const data = (part as { data?: unknown }).data;
        if (typeof data === 'object' && data !== null) return data as OpenAIContentPart;
      }
      return part as OpenAIContentPart;
  }
}

/**
 * Our message content as Chat Completions content: the inverse of `fromOpenAIContent`.
 * OpenAI parts pass unchanged, so a message may mix both.
 *
 * @example
 * toOpenAIContent([{ type: 'file', data: 'UklGR...', mediaType: 'audio/wav' }]);
 * // [{ type: 'input_audio', input_audio: { data: 'UklGR...', format: 'wav' } }]
 */
export function toOpenAIContent(
  content: AgentMessageContent | ReadonlyArray<AgentContentPart | OpenAIContentPart>,
): string | OpenAIContentPart[] {
  if (typeof content === 'string') return content;
  return content.map(toOpenAIPart);
}

/**
 * A chat message as the Chat Completions API takes it. Content parts may be OpenAI's
 * (`image_url`, `input_audio`, `file`, ...) or ours (`image`, `file`), sent as OpenAI's.
 */
export interface OpenAIChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string | null | Array<OpenAIContentPart | AgentContentPart>;
  name?: string;
  tool_call_id?: string;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
}
