import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { anthropicStreamEventSchema } from '../../providers/anthropic/anthropicStreamEventSchema';
import { AnthropicEventError, readAnthropicEvent } from '../../providers/anthropic/readAnthropicEvent';
import { openAICompletionChunkSchema } from '../../providers/openai/openAICompletionChunkSchema';
import { OpenAIChunkError, readOpenAIChunk } from '../../providers/openai/readOpenAIChunk';

/** Values of the wrong kind for any field: the guards and the schemas must refuse them alike. */
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
  fc.oneof({ arbitrary: valid, weight: 5 }, { arbitrary: junk as fc.Arbitrary<unknown>, weight: 1 });
const text = mostly(fc.oneof(fc.string({ maxLength: 4 }), fc.constant(null)));
const optionalFields = <T extends Record<string, fc.Arbitrary<unknown>>>(model: T) =>
  fc.record(model, { requiredKeys: [] });
const usage = mostly(fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }));

/** Whether a guard accepts the value, as the provider sees it: a frame of JSON. */
function guardAccepts(read: (data: string) => unknown, isRefusal: (error: unknown) => boolean, value: unknown) {
  try {
    read(JSON.stringify(value));
    return true;
  } catch (error) {
    if (isRefusal(error)) return false;
    throw error;
  }
}

const openAIChunk = mostly(
  optionalFields({
    id: text,
    model: text,
    choices: mostly(
      fc.array(
        mostly(
          optionalFields({
            index: mostly(fc.oneof(fc.nat({ max: 2 }), fc.double({ noNaN: true, noDefaultInfinity: true }))),
            finish_reason: text,
            delta: mostly(
              optionalFields({
                role: text,
                content: mostly(
                  fc.oneof(
                    text,
                    fc.array(mostly(optionalFields({ type: mostly(fc.string({ maxLength: 4 })), text })), {
                      maxLength: 2,
                    }),
                  ),
                ),
                reasoning_content: text,
                reasoning: text,
                refusal: text,
                tool_calls: mostly(
                  fc.array(
                    mostly(
                      optionalFields({
                        index: mostly(
                          fc.oneof(fc.nat({ max: 2 }), fc.double({ noNaN: true, noDefaultInfinity: true })),
                        ),
                        id: text,
                        type: text,
                        function: mostly(optionalFields({ name: text, arguments: text })),
                      }),
                    ),
                    { maxLength: 2 },
                  ),
                ),
              }),
            ),
          }),
        ),
        { maxLength: 2 },
      ),
    ),
    usage,
    error: mostly(optionalFields({ message: text, code: text, type: text })),
  }),
);

const anthropicEvent = mostly(
  optionalFields({
    type: mostly(
      fc.constantFrom(
        'message_start',
        'content_block_start',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
        'error',
        'ping',
      ),
    ),
    index: mostly(fc.oneof(fc.integer({ min: -1, max: 2 }), fc.double({ noNaN: true, noDefaultInfinity: true }))),
    message: mostly(optionalFields({ id: mostly(fc.string({ maxLength: 3 })), model: mostly(fc.string()), usage })),
    content_block: mostly(optionalFields({ type: mostly(fc.string({ maxLength: 4 })), text })),
    delta: mostly(optionalFields({ type: mostly(fc.string({ maxLength: 4 })), stop_reason: text })),
    usage,
    error: mostly(optionalFields({ type: text, message: text })),
  }),
);

describe('the wire guards and their zod/mini schemas', () => {
  it('readOpenAIChunk accepts exactly the chunks openAICompletionChunkSchema accepts', () => {
    fc.assert(
      fc.property(openAIChunk, (generated) => {
        const value: unknown = JSON.parse(JSON.stringify(generated));
        const accepted = guardAccepts(readOpenAIChunk, (error) => OpenAIChunkError.isInstance(error), value);
        expect(accepted).toBe(openAICompletionChunkSchema.safeParse(value).success);
      }),
      { numRuns: 3000 },
    );
  });

  it('readAnthropicEvent accepts exactly the events anthropicStreamEventSchema accepts', () => {
    fc.assert(
      fc.property(anthropicEvent, (generated) => {
        const value: unknown = JSON.parse(JSON.stringify(generated));
        const accepted = guardAccepts(readAnthropicEvent, (error) => AnthropicEventError.isInstance(error), value);
        expect(accepted).toBe(anthropicStreamEventSchema.safeParse(value).success);
      }),
      { numRuns: 3000 },
    );
  });

  it('the generators reach both verdicts', () => {
    const verdicts = (arbitrary: fc.Arbitrary<unknown>, accepts: (value: unknown) => boolean) =>
      new Set(
        fc.sample(arbitrary, { numRuns: 500, seed: 1 }).map((value) => accepts(JSON.parse(JSON.stringify(value)))),
      );
    expect(verdicts(openAIChunk, (value) => openAICompletionChunkSchema.safeParse(value).success)).toEqual(
      new Set([true, false]),
    );
    expect(verdicts(anthropicEvent, (value) => anthropicStreamEventSchema.safeParse(value).success)).toEqual(
      new Set([true, false]),
    );
  });
});
