import * as z from 'zod/mini';

/** A JSON value as the AI SDK's `jsonValueSchema` accepts it: object entries may be `undefined`. */
export type AISDKJSONValue =
  | null
  | string
  | number
  | boolean
  | { [key: string]: AISDKJSONValue | undefined }
  | AISDKJSONValue[];

const jsonValueSchema: z.ZodMiniType<AISDKJSONValue> = z.lazy(() =>
  z.union([
    z.null(),
    z.string(),
    z.number(),
    z.boolean(),
    z.record(z.string(), z.optional(jsonValueSchema)),
    z.array(jsonValueSchema),
  ]),
);

const jsonObjectSchema = z.record(z.string(), z.optional(jsonValueSchema));
const providerMetadata = z.optional(z.record(z.string(), jsonObjectSchema));
const toolMetadata = z.optional(jsonObjectSchema);
const optionalString = z.optional(z.string());
const optionalBoolean = z.optional(z.boolean());

/** The part of a tool chunk that says who runs the tool and how it is shown. */
const toolCallFields = {
  toolCallId: z.string(),
  toolName: z.string(),
  providerExecuted: optionalBoolean,
  providerMetadata,
  toolMetadata,
  dynamic: optionalBoolean,
  title: optionalString,
};

const toolResultFields = {
  toolCallId: z.string(),
  providerExecuted: optionalBoolean,
  providerMetadata,
  toolMetadata,
  dynamic: optionalBoolean,
};

const dataChunkType = z.custom<`data-${string}`>((value) => typeof value === 'string' && value.startsWith('data-'), {
  message: 'Type must start with "data-"',
});

/** The reasons a `finish` chunk may give, as `ai` 6 sends them. */
export const uiMessageFinishReasons = ['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other'] as const;

/**
 * The AI SDK's UI message stream chunk (the `data:` payload of each server-sent event), as a
 * zod/mini schema: the union `ai` 6.0 exports as `uiMessageChunkSchema`, field for field,
 * plus the three chunks `ai` 7 adds (`reset-step`, `custom` with its `kind`, and
 * `reasoning-file`), so a newer backend's stream reads too. Unknown fields are allowed, as
 * in `ai`. A contract test holds this schema to the verdicts of the pinned `ai` package.
 *
 * @example
 * uiMessageChunkSchema.safeParse({ type: 'text-delta', id: 'text-1', delta: 'Hi' }).success; // true
 * uiMessageChunkSchema.safeParse({ type: 'text-delta', id: 'text-1' }).success; // false: no delta
 */
export const uiMessageChunkSchema = z.union([
  z.looseObject({ type: z.literal('text-start'), id: z.string(), providerMetadata }),
  z.looseObject({ type: z.literal('text-delta'), id: z.string(), delta: z.string(), providerMetadata }),
  z.looseObject({ type: z.literal('text-end'), id: z.string(), providerMetadata }),
  z.looseObject({ type: z.literal('error'), errorText: z.string() }),
  z.looseObject({
    type: z.literal('tool-input-start'),
    ...toolCallFields,
    inputEncoding: z.optional(z.enum(['json', 'text'])),
  }),
  z.looseObject({ type: z.literal('tool-input-delta'), toolCallId: z.string(), inputTextDelta: z.string() }),
  z.looseObject({ type: z.literal('tool-input-available'), ...toolCallFields, input: z.unknown() }),
  z.looseObject({
    type: z.literal('tool-input-error'),
    ...toolCallFields,
    input: z.unknown(),
    errorText: z.string(),
  }),
  z.looseObject({
    type: z.literal('tool-approval-request'),
    approvalId: z.string(),
    toolCallId: z.string(),
    approvalDescriptor: z.optional(z.unknown()),
    inputSchemaInput: z.optional(z.unknown()),
    signature: optionalString,
  }),
  z.looseObject({
    type: z.literal('tool-output-available'),
    ...toolResultFields,
    output: z.unknown(),
    preliminary: optionalBoolean,
  }),
  z.looseObject({ type: z.literal('tool-output-error'), ...toolResultFields, errorText: z.string() }),
  z.looseObject({ type: z.literal('tool-output-denied'), toolCallId: z.string() }),
  z.looseObject({ type: z.literal('reasoning-start'), id: z.string(), providerMetadata }),
  z.looseObject({ type: z.literal('reasoning-delta'), id: z.string(), delta: z.string(), providerMetadata }),
  z.looseObject({ type: z.literal('reasoning-end'), id: z.string(), providerMetadata }),
  z.looseObject({
    type: z.literal('source-url'),
    sourceId: z.string(),
    url: z.string(),
    title: optionalString,
    providerMetadata,
  }),
  z.looseObject({
    type: z.literal('source-document'),
    sourceId: z.string(),
    mediaType: z.string(),
    title: z.string(),
    filename: optionalString,
    providerMetadata,
  }),
  z.looseObject({ type: z.literal('file'), url: z.string(), mediaType: z.string(), providerMetadata }),
  z.looseObject({ type: dataChunkType, id: optionalString, data: z.unknown(), transient: optionalBoolean }),
  z.looseObject({ type: z.literal('start-step') }),
  z.looseObject({ type: z.literal('finish-step') }),
  z.looseObject({ type: z.literal('start'), messageId: optionalString, messageMetadata: z.optional(z.unknown()) }),
  z.looseObject({
    type: z.literal('finish'),
    finishReason: z.optional(z.enum(uiMessageFinishReasons)),
    messageMetadata: z.optional(z.unknown()),
  }),
  z.looseObject({ type: z.literal('abort'), reason: optionalString }),
  z.looseObject({ type: z.literal('message-metadata'), messageMetadata: z.unknown() }),
  z.looseObject({ type: z.literal('reset-step') }),
  z.looseObject({ type: z.literal('custom'), kind: z.string(), providerMetadata }),
  z.looseObject({ type: z.literal('reasoning-file'), url: z.string(), mediaType: z.string(), providerMetadata }),
]);

/**
 * One chunk of the AI SDK's UI message stream, as `uiMessageChunkSchema` accepts it. Narrow
 * it on `type`; a `data-*` chunk's `type` is any string starting with `data-`.
 *
 * @example
 * const chunk: UIMessageChunk = { type: 'data-weather', id: 'w1', data: { city: 'Oslo' } };
 */
export type UIMessageChunk = z.infer<typeof uiMessageChunkSchema>;
