import * as z from 'zod/mini';

const text = z.optional(z.nullable(z.string()));
const record = z.record(z.string(), z.unknown());
const integer = z.number().check(z.refine((value) => Number.isInteger(value)));

const toolCallFragment = z.looseObject({
  index: z.optional(integer),
  id: text,
  function: z.optional(z.nullable(z.looseObject({ name: text, arguments: text }))),
});

const delta = z.looseObject({
  role: text,
  content: z.optional(z.nullable(z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]))),
  reasoning_content: text,
  reasoning: text,
  refusal: text,
  tool_calls: z.optional(z.nullable(z.array(toolCallFragment))),
});

const choice = z.looseObject({
  // Any number: a choice's index is compared with 0, never used as a position.
  index: z.optional(z.number()),
  delta: z.optional(z.nullable(delta)),
  finish_reason: text,
});

/**
 * The shape of a `chat.completion.chunk` that the OpenAI mapping reads, as a zod/mini
 * schema: a chunk with an `error` object (then nothing else is read), one with `choices`,
 * or a usage-only chunk. Unknown fields are allowed. `readOpenAIChunk` checks the same
 * shape by hand, per streamed token; a property test holds the two to the same verdicts.
 *
 * @example
 * openAICompletionChunkSchema.safeParse({ choices: [{ delta: { content: 'Hi' } }] }).success; // true
 */
export const openAICompletionChunkSchema = z.union([
  z.looseObject({ error: record }),
  z.looseObject({
    error: z.optional(z.null()),
    choices: z.array(choice),
    usage: z.optional(z.nullable(record)),
  }),
  z.looseObject({ error: z.optional(z.null()), choices: z.optional(z.undefined()), usage: record }),
]);
