import { describe, expect, it } from 'vitest';
import { applyStatePatch } from './applyStatePatch';

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
});
