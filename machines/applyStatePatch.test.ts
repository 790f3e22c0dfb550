import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonPatchOperation } from '../protocol/eventSchemas';
import { checkPlainJson } from '../protocol/plainJson';
import { runEvents } from '../tests/support/events';
import { applyStatePatch, DEFAULT_STATE_PATCH_LIMITS } from './applyStatePatch';
import { createAgentStore } from './createAgentStore';

describe('applyStatePatch', () => {
  it('copies only the patched path and leaves the input untouched', () => {
    const state = { a: { b: [1, 2] }, c: { d: 1 } };
    const result = applyStatePatch(state, [
      { op: 'add', path: '/a/b/-', value: 3 },
      { op: 'move', from: '/c/d', path: '/e' },
      { op: 'copy', from: '/a', path: '/f' },
    ]);
    expect(result).toEqual({ success: true, state: { a: { b: [1, 2, 3] }, c: {}, e: 1, f: { b: [1, 2, 3] } } });
    expect(state).toEqual({ a: { b: [1, 2] }, c: { d: 1 } });
  });

  it('keeps the identity of untouched branches', () => {
    const state = { a: { x: 1 }, b: { y: 2 } };
    const result = applyStatePatch(state, [{ op: 'replace', path: '/a/x', value: 5 }]);
    expect(result.success && (result.state as typeof state).b).toBe(state.b);
  });

  it('replaces the root and creates state from nothing', () => {
    expect(applyStatePatch(undefined, [{ op: 'add', path: '', value: { n: 1 } }])).toEqual({
      success: true,
      state: { n: 1 },
    });
  });

  it('fails whole when one operation fails, and says which', () => {
    const state = { a: 1 };
    const result = applyStatePatch(state, [
      { op: 'replace', path: '/a', value: 2 },
      { op: 'test', path: '/a', value: 3 },
    ]);
    expect(result.success).toBe(false);
    expect(!result.success && result.reason).toMatch(/^operation 1 \(test \/a\)/);
    expect(state).toEqual({ a: 1 });
    expect(applyStatePatch(state, [{ op: 'remove', path: '/missing/deep' }]).success).toBe(false);
    expect(applyStatePatch(state, [{ op: 'add', path: 'no-slash', value: 1 }]).success).toBe(false);
  });

  it.each(['/__proto__/polluted', '/constructor/prototype/polluted', '/a/prototype'])('refuses %s', (path) => {
    const result = applyStatePatch({ a: {} }, [{ op: 'add', path, value: 1 }]);
    expect(result.success).toBe(false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses a move out of a prototype path', () => {
    expect(applyStatePatch({}, [{ op: 'move', from: '/__proto__', path: '/x' }]).success).toBe(false);
  });

  it('refuses a move into its own child (RFC 6902 4.4), which would make the state cyclic', () => {
    const state = { a: { b: 1 } };
    const intoItself = applyStatePatch(state, [{ op: 'move', from: '', path: '/child' }]);
    expect(intoItself).toEqual({
      success: false,
      reason: 'operation 0 (move /child): "from" "" is a proper prefix of "path", so the value would contain itself',
    });
    expect(applyStatePatch(state, [{ op: 'move', from: '/a', path: '/a/b/c' }]).success).toBe(false);
    expect(state).toEqual({ a: { b: 1 } });
    // A prefix of segments, not of characters: /a into /ab is an ordinary move.
    expect(applyStatePatch(state, [{ op: 'move', from: '/a', path: '/ab' }])).toEqual({
      success: true,
      state: { ab: { b: 1 } },
    });
    expect(applyStatePatch(state, [{ op: 'move', from: '/a', path: '/a' }])).toEqual({ success: true, state });
  });

  it('refuses more operations than the limit, naming it', () => {
    const patch = (count: number): JsonPatchOperation[] =>
      Array.from({ length: count }, (_, index) => ({ op: 'add', path: `/k${index}`, value: index }));
    expect(DEFAULT_STATE_PATCH_LIMITS.maxOperations).toBe(1_000);
    expect(applyStatePatch({}, patch(1_001))).toEqual({
      success: false,
      reason: 'patch has 1001 operations; the limit is 1000',
    });
    const result = applyStatePatch({}, patch(1_000));
    expect(result.success && Object.keys(result.state as object).length).toBe(1_000);
    expect(applyStatePatch({}, patch(3), { maxOperations: 2 })).toEqual({
      success: false,
      reason: 'patch has 3 operations; the limit is 2',
    });
  });

  it('refuses copies that would grow the state past the size limit, before making them', () => {
    const state = { text: 'x'.repeat(16_000) };
    const copies: JsonPatchOperation[] = Array.from({ length: 20 }, (_, index) => ({
      op: 'copy',
      from: '',
      path: `/c${index}`,
    }));
    const result = applyStatePatch(state, copies);
    // Each copy doubles the state: 16 KB after none, 16.8 MB after ten, past the 10 MiB limit at the tenth.
    expect(result).toEqual({
      success: false,
      reason: 'operation 9 (copy /c9): the state would be over 10485760 characters of JSON; the limit is 10485760',
    });
    expect(state).toEqual({ text: 'x'.repeat(16_000) });
    const small = applyStatePatch(state, copies.slice(0, 3), { maxStateSize: 200_000 });
    expect(small.success && JSON.stringify(small.state).length).toBe(128_130);
  });

  it('measures the patched state, not the sum of what the operations wrote', () => {
    const limits = { maxStateSize: 100 };
    const state = { a: 'x'.repeat(60) };
    // 69 characters before and after, though 60 more were written.
    expect(applyStatePatch(state, [{ op: 'replace', path: '/a', value: 'y'.repeat(60) }], limits)).toEqual({
      success: true,
      state: { a: 'y'.repeat(60) },
    });
    expect(applyStatePatch(state, [{ op: 'add', path: '/b', value: 'z'.repeat(30) }], limits)).toEqual({
      success: false,
      reason: 'the state would be over 100 characters of JSON; the limit is 100',
    });
    // A patch may bring an oversized state back under the limit.
    const large = { a: 'x'.repeat(200) };
    expect(applyStatePatch(large, [{ op: 'remove', path: '/a' }], limits)).toEqual({ success: true, state: {} });
  });
});

describe('applyStatePatch: a "from" that does not exist', () => {
  it.each<[string, JsonPatchOperation]>([
    ['the end of an array', { op: 'move', from: '/arr/-', path: '' }],
    ['past the end of an array', { op: 'move', from: '/arr/2', path: '/x' }],
    ['a missing key', { op: 'copy', from: '/missing', path: '/x' }],
    ['a key under a number', { op: 'move', from: '/arr/0/deep', path: '/x' }],
    ['a key inherited from Object.prototype', { op: 'copy', from: '/toString', path: '/x' }],
  ])('refuses a move or copy from %s, whole, and keeps the state', (_, operation) => {
    const state = { arr: [1, 2], kept: true };
    const result = applyStatePatch(state, [{ op: 'add', path: '/kept', value: false }, operation]);
    expect(result).toEqual({
      success: false,
      reason: `operation 1 (${operation.op} ${operation.path}): "from" ${JSON.stringify((operation as { from: string }).from)} does not exist`,
    });
    expect(state).toEqual({ arr: [1, 2], kept: true });
  });

  it('refuses a move or copy from the root of a state that does not exist yet', () => {
    expect(applyStatePatch(undefined, [{ op: 'copy', from: '', path: '' }])).toEqual({
      success: false,
      reason: 'operation 0 (copy ): "from" "" does not exist',
    });
  });

  it('checks "from" against the document as the earlier operations left it', () => {
    expect(
      applyStatePatch({ a: 1 }, [
        { op: 'move', from: '/a', path: '/b' },
        { op: 'move', from: '/a', path: '/c' },
      ]),
    ).toEqual({ success: false, reason: 'operation 1 (move /c): "from" "/a" does not exist' });
    expect(
      applyStatePatch({}, [
        { op: 'add', path: '/a', value: [0] },
        { op: 'move', from: '/a/0', path: '/b' },
      ]),
    ).toEqual({ success: true, state: { a: [], b: 0 } });
  });

  it('refuses an array index written otherwise than RFC 6901 does, and never changes the previous state', () => {
    const state = [0, { a: 1 }];
    expect(applyStatePatch(state, [{ op: 'add', path: '/01/a', value: 2 }])).toEqual({
      success: false,
      reason: 'operation 0 (add /01/a): "01" in "/01/a" is not an array index',
    });
    expect(applyStatePatch(state, [{ op: 'copy', from: '', path: '/1/a' }]).success).toBe(true);
    expect(state).toEqual([0, { a: 1 }]);
  });

  it('always leaves JSON, or refuses the patch and changes nothing (random patches)', () => {
    const segment = fc.constantFrom('a', 'b', 'arr', '0', '1', '2', '-', '01', 'x', 'length');
    const pointer = fc.array(segment, { maxLength: 3 }).map((segments) => segments.map((s) => `/${s}`).join(''));
    const value = fc.oneof(fc.integer(), fc.constant(null), fc.constant({ x: 1 }), fc.constant([1]));
    const operation: fc.Arbitrary<JsonPatchOperation> = fc.oneof(
      fc.record({ op: fc.constantFrom('add' as const, 'replace' as const, 'test' as const), path: pointer, value }),
      fc.record({ op: fc.constant('remove' as const), path: pointer }),
      fc.record({ op: fc.constantFrom('move' as const, 'copy' as const), from: pointer, path: pointer }),
    );
    const start = fc.constantFrom(
      () => undefined,
      () => ({ a: { x: 1 }, arr: [1, [2], { b: 3 }], b: 'text' }),
      () => [0, { a: 1 }],
    );
    fc.assert(
      fc.property(start, fc.array(operation, { minLength: 1, maxLength: 6 }), (makeState, patch) => {
        const state = makeState();
        const before = JSON.stringify(state);
        const result = applyStatePatch(state, patch);
        expect(JSON.stringify(state)).toBe(before);
        if (!result.success) return;
        expect(result.state).not.toBeUndefined();
        expect(checkPlainJson(result.state)).toBeUndefined();
        expect(JSON.parse(JSON.stringify(result.state))).toEqual(result.state);
      }),
      { numRuns: 3_000 },
    );
  });
});

describe('a state.delta moving from nowhere, through the store', () => {
  it('is invalid_patch, atomically, and the shared state stays what it was', () => {
    const store = createAgentStore();
    const events = runEvents('r1');
    store.batch([
      events.create('run.started', {}),
      events.create('state.snapshot', { snapshot: { arr: [1], kept: true } }),
      events.create('state.delta', {
        patch: [
          { op: 'replace', path: '/kept', value: false },
          { op: 'move', from: '/arr/-', path: '' },
        ],
      }),
    ]);
    const state = store.getSnapshot();
    expect(state.state.s1).toEqual({ arr: [1], kept: true });
    expect(state.issues.map((issue) => [issue.code, issue.message])).toEqual([
      ['invalid_patch', 'state.delta was not applied: operation 1 (move ): "from" "/arr/-" does not exist'],
    ]);
    expect(JSON.parse(JSON.stringify(state))).toEqual(state);
  });
});
