import { uiMessageChunkSchema as aiUIMessageChunkSchema } from 'ai';
import aiPackage from 'ai/package.json' with { type: 'json' };
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { uiMessageChunkSchema } from '../../providers/ai-sdk/uiMessageChunkSchema';

// The pinned minor this schema is held to; a new minor of `ai` needs this contract run against it.
const PINNED_AI_MINOR = '6.0';
/** Chunks `ai` 7 adds, which this schema also reads and `ai` 6 refuses. */
const AI_7_ONLY = new Set(['reset-step', 'custom', 'reasoning-file']);

/** Values of the wrong kind for any field: both schemas must refuse them alike. */
const junk = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -3, max: 3 }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 3 }),
  fc.constant([]),
  fc.constant({}),
);
/** Mostly the valid shape, sometimes junk. */
const mostly = <T>(valid: fc.Arbitrary<T>) =>
  fc.oneof(
    { arbitrary: valid as fc.Arbitrary<unknown>, weight: 6 },
    { arbitrary: junk as fc.Arbitrary<unknown>, weight: 1 },
  );
const json = fc.jsonValue({ maxDepth: 2 });
const jsonObject = fc.dictionary(fc.string({ maxLength: 3 }), fc.oneof(json, fc.constant(undefined)), { maxKeys: 2 });
const providerMetadata = fc.dictionary(fc.string({ maxLength: 3 }), mostly(jsonObject), { maxKeys: 2 });

type Kind = 'string' | 'boolean' | 'unknown' | 'providerMetadata' | 'toolMetadata' | 'encoding' | 'finishReason';
/** Each chunk's fields: kind, and whether it is required. */
const FIELDS: Record<string, Record<string, [Kind, boolean]>> = (() => {
  const pm: [Kind, boolean] = ['providerMetadata', false];
  const part = { id: ['string', true], providerMetadata: pm } as Record<string, [Kind, boolean]>;
  const tool: Record<string, [Kind, boolean]> = {
    toolCallId: ['string', true],
    toolName: ['string', true],
    providerExecuted: ['boolean', false],
    providerMetadata: pm,
    toolMetadata: ['toolMetadata', false],
    dynamic: ['boolean', false],
    title: ['string', false],
  };
  const result: Record<string, [Kind, boolean]> = {
    toolCallId: ['string', true],
    providerExecuted: ['boolean', false],
    providerMetadata: pm,
    toolMetadata: ['toolMetadata', false],
    dynamic: ['boolean', false],
  };
  return {
    'text-start': part,
    'text-delta': { ...part, delta: ['string', true] },
    'text-end': part,
    'reasoning-start': part,
    'reasoning-delta': { ...part, delta: ['string', true] },
    'reasoning-end': part,
    error: { errorText: ['string', true] },
    'tool-input-start': { ...tool, inputEncoding: ['encoding', false] },
    'tool-input-delta': { toolCallId: ['string', true], inputTextDelta: ['string', true] },
    'tool-input-available': { ...tool, input: ['unknown', true] },
    'tool-input-error': { ...tool, input: ['unknown', true], errorText: ['string', true] },
    'tool-approval-request': {
      approvalId: ['string', true],
      toolCallId: ['string', true],
      approvalDescriptor: ['unknown', false],
      inputSchemaInput: ['unknown', false],
      signature: ['string', false],
    },
    'tool-output-available': { ...result, output: ['unknown', true], preliminary: ['boolean', false] },
    'tool-output-error': { ...result, errorText: ['string', true] },
    'tool-output-denied': { toolCallId: ['string', true] },
    'source-url': { sourceId: ['string', true], url: ['string', true], title: ['string', false], providerMetadata: pm },
    'source-document': {
      sourceId: ['string', true],
      mediaType: ['string', true],
      title: ['string', true],
      filename: ['string', false],
      providerMetadata: pm,
    },
    file: { url: ['string', true], mediaType: ['string', true], providerMetadata: pm },
    'data-weather': { id: ['string', false], data: ['unknown', true], transient: ['boolean', false] },
    'start-step': {},
    'finish-step': {},
    start: { messageId: ['string', false], messageMetadata: ['unknown', false] },
    finish: { finishReason: ['finishReason', false], messageMetadata: ['unknown', false] },
    abort: { reason: ['string', false] },
    'message-metadata': { messageMetadata: ['unknown', true] },
    'reset-step': {},
    custom: { kind: ['string', true], providerMetadata: pm },
    'reasoning-file': { url: ['string', true], mediaType: ['string', true], providerMetadata: pm },
  };
})();

const VALID: Record<Kind, fc.Arbitrary<unknown>> = {
  string: fc.string({ maxLength: 4 }),
  boolean: fc.boolean(),
  unknown: json,
  providerMetadata,
  toolMetadata: jsonObject,
  encoding: fc.constantFrom('json', 'text', 'xml'),
  finishReason: fc.constantFrom('stop', 'length', 'content-filter', 'tool-calls', 'error', 'other', 'interrupted'),
};

/** A chunk of `type`: its fields mostly valid, sometimes junk or missing, and sometimes an unknown field. */
function chunkOf(type: string): fc.Arbitrary<unknown> {
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [field, [kind]] of Object.entries(FIELDS[type] ?? {})) model[field] = mostly(VALID[kind]);
  const required = Object.entries(FIELDS[type] ?? {})
    .filter(([, [, isRequired]]) => isRequired)
    .map(([field]) => field);
  return fc
    .tuple(
      fc.record(model, { requiredKeys: [] }),
      fc.boolean(),
      fc.boolean(),
      fc.oneof(fc.constant(undefined), fc.constantFrom(...(required.length > 0 ? required : ['none']))),
    )
    .map(([fields, complete, extra, drop]) => {
      const chunk: Record<string, unknown> = { type, ...fields };
      // Mostly complete: the required fields are there (valid or junk), one may be dropped.
      if (complete)
        for (const field of required) if (!(field in chunk)) chunk[field] = type === 'data-weather' ? 1 : 'x';
      if (drop !== undefined) delete chunk[drop];
      if (extra) chunk.extraField = 'kept';
      return chunk;
    });
}

const anyChunk = fc.oneof(
  ...Object.keys(FIELDS).map((type) => ({ arbitrary: chunkOf(type), weight: 3 })),
  { arbitrary: fc.record({ type: fc.constantFrom('data-', 'data-x-y', 'text', 'tool-call', 'DATA-x') }), weight: 1 },
  { arbitrary: junk, weight: 1 },
);

async function aiAccepts(value: unknown): Promise<boolean> {
  const schema = aiUIMessageChunkSchema();
  const result = await schema.validate?.(value);
  if (result === undefined) throw new Error('ai’s uiMessageChunkSchema has no validate');
  return result.success;
}

describe(`uiMessageChunkSchema agrees with the pinned ai ${PINNED_AI_MINOR} package’s own schema`, () => {
  it('runs against the pinned minor', () => {
    expect(aiPackage.version.startsWith(`${PINNED_AI_MINOR}.`)).toBe(true);
  });

  it('accepts exactly what ai’s uiMessageChunkSchema accepts (ai 7’s three chunks aside)', async () => {
    await fc.assert(
      fc.asyncProperty(anyChunk, async (value) => {
        const type = (value as { type?: unknown } | null)?.type;
        const ours = uiMessageChunkSchema.safeParse(value).success && !AI_7_ONLY.has(type as string);
        expect(ours).toBe(await aiAccepts(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('accepts a valid chunk of every variant, which ai accepts too', async () => {
    const valid: unknown[] = [
      { type: 'text-start', id: 't', providerMetadata: { openai: { itemId: 'x', extra: null } } },
      { type: 'text-delta', id: 't', delta: 'Hi' },
      { type: 'text-end', id: 't' },
      { type: 'reasoning-start', id: 'r' },
      { type: 'reasoning-delta', id: 'r', delta: '…' },
      { type: 'reasoning-end', id: 'r' },
      { type: 'error', errorText: 'boom' },
      { type: 'tool-input-start', toolCallId: 'c', toolName: 'w', inputEncoding: 'text', dynamic: true, title: 'W' },
      { type: 'tool-input-delta', toolCallId: 'c', inputTextDelta: '{' },
      { type: 'tool-input-available', toolCallId: 'c', toolName: 'w', input: { city: 'Oslo' }, toolMetadata: { a: 1 } },
      { type: 'tool-input-error', toolCallId: 'c', toolName: 'w', input: '{bad', errorText: 'invalid' },
      { type: 'tool-approval-request', approvalId: 'a', toolCallId: 'c', signature: 's' },
      { type: 'tool-output-available', toolCallId: 'c', output: null, preliminary: true },
      { type: 'tool-output-error', toolCallId: 'c', errorText: 'failed' },
      { type: 'tool-output-denied', toolCallId: 'c' },
      { type: 'source-url', sourceId: 's', url: 'https://example.com' },
      { type: 'source-document', sourceId: 's', mediaType: 'application/pdf', title: 'Doc', filename: 'd.pdf' },
      { type: 'file', url: 'data:image/png;base64,AA==', mediaType: 'image/png' },
      { type: 'data-weather', id: 'w', data: { celsius: 4 }, transient: false },
      { type: 'start-step' },
      { type: 'finish-step' },
      { type: 'start', messageId: 'm', messageMetadata: { model: 'x' } },
      { type: 'finish', finishReason: 'tool-calls' },
      { type: 'abort', reason: 'user' },
      { type: 'message-metadata', messageMetadata: { tokens: 3 } },
    ];
    for (const chunk of valid) {
      expect(uiMessageChunkSchema.safeParse(chunk).success).toBe(true);
      expect(await aiAccepts(chunk)).toBe(true);
    }
  });

  it('reads ai 7’s reset-step, custom and reasoning-file, which ai 6 refuses', async () => {
    const ai7 = [
      { type: 'reset-step' },
      { type: 'custom', kind: 'openai.compaction' },
      { type: 'reasoning-file', url: 'https://example.com/r.png', mediaType: 'image/png' },
    ];
    for (const chunk of ai7) {
      expect(uiMessageChunkSchema.safeParse(chunk).success).toBe(true);
      expect(await aiAccepts(chunk)).toBe(false);
    }
    expect(uiMessageChunkSchema.safeParse({ type: 'custom' }).success).toBe(false);
    expect(uiMessageChunkSchema.safeParse({ type: 'reasoning-file', url: 'u' }).success).toBe(false);
  });
});
