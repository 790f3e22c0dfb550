import { describe, expect, it } from 'vitest';
import type { JsonPatchOperation } from '../protocol/eventSchemas';
import { applyStatePatch, DEFAULT_STATE_PATCH_LIMITS } from './applyStatePatch';

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
