import { describe, expect, expectTypeOf, it } from 'vitest';
import * as zodClassic from 'zod';
import * as z from 'zod/mini';
import { AgentValidationError } from '../../protocol/errors';
import { defineAgentTool } from './defineAgentTool';

describe('defineAgentTool', () => {
  it('sends the input side of a zod schema as JSON Schema, and parses arguments with it', () => {
    const tool = defineAgentTool({
      name: 'get_weather',
      description: 'The weather in a city',
      inputSchema: z.object({ city: z.string(), days: z._default(z.number(), 1) }),
      execute: ({ city, days }) => ({ city, days }),
    });
    expect(tool.inputJsonSchema).toEqual({
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'number', default: 1 } },
      required: ['city'],
    });
    // The schema's output is the input: defaults applied, unknown keys stripped.
    expect(tool.parseInput({ city: 'Paris', other: true })).toEqual({
      success: true,
      input: { city: 'Paris', days: 1 },
    });
    const invalid = tool.parseInput({ city: 42 });
    expect(invalid).toMatchObject({
      success: false,
      issues: [{ path: 'city', message: expect.stringContaining('expected string') }],
    });
    expect(invalid.success === false && invalid.message).toMatch(
      /^Invalid arguments for get_weather: city: .*expected string/,
    );
    expectTypeOf(tool.execute).parameter(0).toEqualTypeOf<{ city: string; days: number }>();
  });

  it('takes classic zod schemas as well as zod/mini ones', () => {
    const tool = defineAgentTool({
      name: 'search',
      description: 'Searches',
      inputSchema: zodClassic.object({ query: zodClassic.string().min(2) }),
    });
    expect(tool.inputJsonSchema).toEqual({
      type: 'object',
      properties: { query: { type: 'string', minLength: 2 } },
      required: ['query'],
    });
    expect(tool.parseInput({ query: 'a' })).toMatchObject({ success: false, issues: [{ path: 'query' }] });
    expect(tool.parseInput({ query: 'agents' })).toEqual({ success: true, input: { query: 'agents' } });
  });

  it('sends a JSON Schema as it is and validates arguments against it', () => {
    const inputSchema = { type: 'object', properties: { glob: { type: 'string' } }, required: ['glob'] };
    const tool = defineAgentTool({ name: 'delete_files', description: 'Deletes files', inputSchema });
    expect(tool.inputJsonSchema).toBe(inputSchema);
    expect(tool.parseInput({ glob: '*.log' })).toEqual({ success: true, input: { glob: '*.log' } });
    expect(tool.parseInput({ glob: 7, force: true })).toEqual({
      success: false,
      message: 'Invalid arguments for delete_files: glob: Instance type "number" is invalid. Expected "string"',
      issues: [{ path: 'glob', message: 'Instance type "number" is invalid. Expected "string"' }],
    });
    expect(tool.parseInput({})).toEqual({
      success: false,
      message: 'Invalid arguments for delete_files: Instance does not have required property "glob"',
      issues: [{ path: '', message: 'Instance does not have required property "glob"' }],
    });
    expect(tool.execute).toBeUndefined();
    expectTypeOf(tool.parseInput).returns.toExtend<{ success: true; input: unknown } | { success: false }>();
  });

  it('makes needsApproval a function of the input, and leaves it out when the tool never asks', async () => {
    const inputSchema = z.object({ amount: z.number() });
    const always = defineAgentTool({
      name: 'pay',
      description: 'Pays',
      inputSchema,
      needsApproval: true,
      execute: () => 'paid',
    });
    const above = defineAgentTool({
      name: 'pay_above',
      description: 'Pays',
      inputSchema,
      needsApproval: ({ amount }) => amount > 100,
      execute: () => 'paid',
    });
    const never = defineAgentTool({ name: 'pay_never', description: 'Pays', inputSchema, needsApproval: false });
    const options = { runId: 'r1', toolCallId: 't1' };
    expect(await always.needsApproval?.({ amount: 1 }, options)).toBe(true);
    expect(await above.needsApproval?.({ amount: 1 }, options)).toBe(false);
    expect(await above.needsApproval?.({ amount: 500 }, options)).toBe(true);
    expect(never.needsApproval).toBeUndefined();
  });

  it('refuses a definition that cannot work, saying why', () => {
    const inputSchema = z.object({});
    const refusal = (define: () => unknown) => {
      try {
        define();
      } catch (error) {
        expect(AgentValidationError.isInstance(error)).toBe(true);
        return (error as AgentValidationError).failure;
      }
      throw new Error('the definition was accepted');
    };
    expect(refusal(() => defineAgentTool({ name: 'get weather', description: '', inputSchema }))).toMatchObject({
      path: 'name',
    });
    expect(refusal(() => defineAgentTool({ name: 'x'.repeat(65), description: '', inputSchema }))).toMatchObject({
      path: 'name',
    });
    expect(
      refusal(() => defineAgentTool({ name: 'list', description: '', inputSchema: z.array(z.string()) })),
    ).toMatchObject({
      path: 'inputSchema',
      message: expect.stringContaining('"array"'),
    });
    expect(
      refusal(() => defineAgentTool({ name: 'raw', description: '', inputSchema: { type: 'string' } })),
    ).toMatchObject({
      path: 'inputSchema',
    });
    expect(
      refusal(() => defineAgentTool({ name: 'when', description: '', inputSchema: z.object({ at: z.date() }) })),
    ).toMatchObject({ path: 'inputSchema', message: expect.stringContaining('no JSON Schema') });
    expect(refusal(() => defineAgentTool({ name: 'slow', description: '', inputSchema, timeoutMs: 0 }))).toMatchObject({
      path: 'timeoutMs',
    });
    expect(
      refusal(() =>
        defineAgentTool({ name: 'odd', description: '', inputSchema: { type: 'object', default: () => 1 } }),
      ),
    ).toMatchObject({ path: 'inputSchema' });
    const twice = {
      type: 'object',
      properties: { a: { $id: 'https://example.com/x' }, b: { $id: 'https://example.com/x' } },
    };
    expect(refusal(() => defineAgentTool({ name: 'ids', description: '', inputSchema: twice }))).toMatchObject({
      path: 'inputSchema',
      message: expect.stringContaining('cannot be read: Duplicate schema URI'),
    });
  });
});
