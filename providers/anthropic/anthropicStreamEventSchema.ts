import * as z from 'zod/mini';

const record = z.record(z.string(), z.unknown());
const blockIndex = z.number().check(z.refine((value) => Number.isInteger(value) && value >= 0));
const typed = z.looseObject({ type: z.string() });

/** The event types whose fields the mapping reads; any other type passes as it is (`ping`, types added later). */
const READ_TYPES: ReadonlySet<string> = new Set([
  'message_start',
  'content_block_start',
  'content_block_delta',
  'content_block_stop',
  'message_delta',
  'error',
]);

/**
 * The shape of a Messages API stream event that the Anthropic mapping reads, as a zod/mini
 * schema. Unknown fields, and events of other types, are allowed. `readAnthropicEvent`
 * checks the same shape by hand, per streamed token; a property test holds the two to the
 * same verdicts.
 *
 * @example
 * anthropicStreamEventSchema.safeParse({ type: 'content_block_stop', index: 0 }).success; // true
 */
export const anthropicStreamEventSchema = z.union([
  z.looseObject({
    type: z.literal('message_start'),
    message: z.looseObject({
      id: z.optional(z.string()),
      model: z.optional(z.string()),
      usage: z.optional(z.nullable(record)),
    }),
  }),
  z.looseObject({ type: z.literal('content_block_start'), index: blockIndex, content_block: typed }),
  z.looseObject({ type: z.literal('content_block_delta'), index: blockIndex, delta: typed }),
  z.looseObject({ type: z.literal('content_block_stop'), index: blockIndex }),
  z.looseObject({
    type: z.literal('message_delta'),
    delta: z.optional(record),
    usage: z.optional(z.nullable(record)),
  }),
  z.looseObject({ type: z.literal('error'), error: record }),
  z.looseObject({ type: z.string().check(z.refine((type) => !READ_TYPES.has(type))) }),
]);
