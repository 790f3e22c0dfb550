import { describe, expect, it, vi } from 'vitest';
import { AgentError } from '../protocol/errors';
import { AgentCheckpointError, describeCheckpointPath, describeCheckpointReason } from './AgentCheckpointError';

describe('AgentCheckpointError', () => {
  it('is an AgentError with a code, a path and a name', () => {
    const error = new AgentCheckpointError('invalid_checkpoint', 'Invalid checkpoint: state: bad', { path: 'state' });
    expect(AgentError.isInstance(error)).toBe(true);
    expect(AgentCheckpointError.isInstance(error)).toBe(true);
    expect(AgentCheckpointError.isInstance(new AgentError('invalid_checkpoint', 'x'))).toBe(false);
    expect(error).toMatchObject({ name: 'AgentCheckpointError', code: 'invalid_checkpoint', path: 'state' });
  });

  it('is recognised across two copies of the module', async () => {
    vi.resetModules();
    const copy = await import('./AgentCheckpointError');
    const other = new copy.AgentCheckpointError('storage_failed', 'failed');
    expect(other instanceof AgentCheckpointError).toBe(false);
    expect(AgentCheckpointError.isInstance(other)).toBe(true);
  });

  it('keeps overlong keys out of paths, and stored values out of reasons', () => {
    const key = 'k'.repeat(100_000);
    const error = new AgentCheckpointError('invalid_checkpoint', 'x', { path: `inputByRun.${key}.a` });
    expect(error.path?.length).toBeLessThan(200);
    expect(describeCheckpointPath(`inputByRun.${key}`).length).toBeLessThan(200);
    expect(describeCheckpointPath('')).toBe('(root)');
    const secret = `SECRET-${'x'.repeat(1000)}`;
    const reason = describeCheckpointReason(`expected one of ["running","completed"], got "${secret}"`);
    expect(reason).toBe('expected one of ["running","completed"], got a value not allowed here');
    expect(describeCheckpointReason('expected string, got number')).toBe('expected string, got number');
    expect(describeCheckpointReason(`names run "${secret}", which is not in runs`)).not.toContain('x'.repeat(40));
  });
});
