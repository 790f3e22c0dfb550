import { describe, expect, it } from 'vitest';
import { toAnthropicContent } from './anthropicContent';

describe('toAnthropicContent', () => {
  it('sends text as text blocks and leaves empty text out, as the API refuses it', () => {
    expect(toAnthropicContent('Hi')).toEqual([{ type: 'text', text: 'Hi' }]);
    expect(toAnthropicContent('')).toEqual([]);
    expect(
      toAnthropicContent([
        { type: 'text', text: '' },
        { type: 'text', text: 'Look' },
      ]),
    ).toEqual([{ type: 'text', text: 'Look' }]);
  });

  it('sends images as image blocks: base64 from data or a data URL, or a URL source', () => {
    expect(
      toAnthropicContent([
        { type: 'image', data: 'iVBOR', mediaType: 'image/jpeg' },
        { type: 'image', data: 'iVBOR' },
        { type: 'image', url: 'data:image/webp;base64,UklGR' },
        { type: 'image', url: 'https://example.com/cat.png' },
      ]),
    ).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'iVBOR' } },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR' } },
      { type: 'image', source: { type: 'base64', media_type: 'image/webp', data: 'UklGR' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
    ]);
  });

  it('sends files as document blocks, with their name as title, and text files as text', () => {
    const text = Buffer.from('Grüße aus Köln', 'utf8').toString('base64');
    expect(
      toAnthropicContent([
        { type: 'file', data: 'JVBER', mediaType: 'application/pdf', name: 'report.pdf' },
        { type: 'file', url: 'https://example.com/report.pdf' },
        { type: 'file', data: text, mediaType: 'text/plain', name: 'notes.txt' },
      ]),
    ).toEqual([
      {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: 'JVBER' },
        title: 'report.pdf',
      },
      { type: 'document', source: { type: 'url', url: 'https://example.com/report.pdf' } },
      {
        type: 'document',
        source: { type: 'text', media_type: 'text/plain', data: 'Grüße aus Köln' },
        title: 'notes.txt',
      },
    ]);
  });

  it('sends anthropic.* parts as the blocks they hold, except tool results, which go with their call', () => {
    const image = { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } };
    expect(
      toAnthropicContent([
        { type: 'anthropic.image', data: image },
        { type: 'anthropic.tool_result', data: { type: 'tool_result', tool_use_id: 'toolu_1', content: '14' } },
      ]),
    ).toEqual([image]);
  });

  it('throws a TypeError naming the part the API cannot take', () => {
    expect(() => toAnthropicContent([{ type: 'image' }])).toThrow(
      new TypeError('A part of type "image" cannot be sent to the Anthropic Messages API: it has neither url nor data'),
    );
    expect(() => toAnthropicContent([{ type: 'openai.input_audio', data: {} }])).toThrow(
      'A part of type "openai.input_audio" cannot be sent to the Anthropic Messages API',
    );
  });
});
