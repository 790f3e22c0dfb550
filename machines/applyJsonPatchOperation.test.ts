import fc from 'fast-check';
import { applyOperation } from 'fast-json-patch/module/core.mjs';
import { describe, expect, it } from 'vitest';
import type { JsonPatchOperation } from '../protocol/eventSchemas';
import { applyJsonPatchOperation } from './applyJsonPatchOperation';

const SEGMENTS = ['a', 'b', 'arr', '0', '1', '2', '3', '-', '01', 'x', '', 'toString', 'length', 'a/b', '~'];
const ARRAY_INDEX = /^(?:0|[1-9][0-9]*)$/;

const escapeSegment = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');
const pointerOf = (segments: readonly string[]) => segments.map((segment) => `/${escapeSegment(segment)}`).join('');

/** What `applyStatePatch` makes sure of before it applies an operation (see its checks). */
function admitted(document: unknown, path: readonly string[], from: readonly string[] | undefined, move: boolean) {
  const indexesLegal = (segments: readonly string[]) => {
    let value = document;
    for (const [position, segment] of segments.entries()) {
      if (typeof value !== 'object' || value === null) return true;
      if (Array.isArray(value)) {
        if (!ARRAY_INDEX.test(segment) && !(position === segments.length - 1 && segment === '-')) return false;
      } else if (!Object.hasOwn(value, segment)) return true;
      value = (value as Record<string, unknown>)[segment];
    }
    return true;
  };
  const exists = (segments: readonly string[]) => {
    if (document === undefined) return false;
    let value = document;
    for (const segment of segments) {
      if (typeof value !== 'object' || value === null) return false;
      if (
        Array.isArray(value)
          ? !ARRAY_INDEX.test(segment) || Number(segment) >= value.length
          : !Object.hasOwn(value, segment)
      )
        return false;
      value = (value as Record<string, unknown>)[segment];
    }
    return true;
  };
  if (!indexesLegal(path) || (from !== undefined && !indexesLegal(from))) return false;
  if (from !== undefined && !exists(from)) return false;
  const properPrefix = from !== undefined && from.length < path.length && from.every((s, i) => s === path[i]);
  return !(move && properPrefix);
}

type Outcome = { document: unknown; input: unknown } | { error: string };

function outcome(apply: (input: unknown) => unknown, document: unknown): Outcome {
  const input = document === undefined ? undefined : structuredClone(document);
  try {
    return { document: apply(input), input };
  } catch (error) {
    return { error: (error as Error).message.split('\n')[0] as string };
  }
}

describe('applyJsonPatchOperation', () => {
  it('does what fast-json-patch does with validation, on what applyStatePatch admits (random operations)', () => {
    const key = fc.constantFrom(...SEGMENTS);
    const json = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.integer({ min: 0, max: 3 }),
        fc.constantFrom(null, 'text', true),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(key, tie('value'), { maxKeys: 4 }),
      ),
    })).value;
    const pointer = fc.array(key, { maxLength: 3 });
    const operation = fc.oneof(
      fc.record({
        op: fc.constantFrom('add' as const, 'replace' as const, 'test' as const),
        path: pointer,
        value: json,
      }),
      fc.record({ op: fc.constant('remove' as const), path: pointer }),
      fc.record({ op: fc.constantFrom('move' as const, 'copy' as const), from: pointer, path: pointer }),
    );
    const document = fc.oneof(json, fc.constant(undefined));
    let compared = 0;
    fc.assert(
      fc.property(document, operation, (start, generated) => {
        const from = 'from' in generated ? generated.from : undefined;
        fc.pre(admitted(start, generated.path, from, generated.op === 'move'));
        const wire = {
          ...generated,
          path: pointerOf(generated.path),
          ...(from === undefined ? {} : { from: pointerOf(from) }),
        } as JsonPatchOperation;
        const ours = outcome((input) => applyJsonPatchOperation(input, wire, generated.path, from ?? []), start);
        const theirs = outcome(
          (input) => applyOperation(input, structuredClone(wire), true, true, true, 0).newDocument,
          start,
        );
        expect(ours).toEqual(theirs);
        compared += 1;
      }),
      { numRuns: 5_000 },
    );
    expect(compared).toBe(5_000);
  });

  it('says why it refuses, in fast-json-patch words', () => {
    const refusal = (document: unknown, operation: JsonPatchOperation, path: string[], from: string[] = []) =>
      outcome((input) => applyJsonPatchOperation(input, operation, path, from), document);
    expect(refusal({ a: 1 }, { op: 'test', path: '/a', value: 2 }, ['a'])).toEqual({ error: 'Test operation failed' });
    expect(refusal({}, { op: 'add', path: '/a/b', value: 1 }, ['a', 'b'])).toEqual({
      error: 'Cannot perform an `add` operation at the desired path',
    });
    expect(refusal({}, { op: 'remove', path: '/a' }, ['a'])).toEqual({
      error: 'Cannot perform the operation at a path that does not exist',
    });
    expect(refusal({ a: 1 }, { op: 'copy', from: '/a', path: '/a/b' }, ['a', 'b'], ['a'])).toEqual({
      error: 'Cannot perform operation at the desired path',
    });
    expect(refusal([1], { op: 'add', path: '/3', value: 1 }, ['3'])).toEqual({
      error: 'The specified index MUST NOT be greater than the number of elements in the array',
    });
    expect(refusal({}, { op: 'add', path: '/a', value: [1, undefined] }, ['a'])).toEqual({
      error: 'Operation `value` property is not present (applicable in `add`, `replace` and `test` operations)',
    });
  });
});
