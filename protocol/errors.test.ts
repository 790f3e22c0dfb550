import { describe, expect, it, vi } from 'vitest';
import { AgentProviderError } from '../providers/AgentProviderError';
import { OpenAIStreamError } from '../providers/openai/createOpenAICompatibleAgentProvider';
import { AgentTransportError } from '../transports/AgentTransportError';
import { AgentError, AgentProtocolError, AgentValidationError } from './errors';

class ResumeTransportError extends AgentTransportError {
  constructor() {
    super('network_error', 'resume failed');
    this.name = 'ResumeTransportError';
  }
}

const failure = { path: 'runs', reason: 'r', message: 'm' };

describe('AgentError.isInstance', () => {
  it('answers for the class it is called on and its subclasses only', () => {
    const errors = {
      agent: new AgentError('code', 'message'),
      transport: new AgentTransportError('aborted', 'aborted'),
      resume: new ResumeTransportError(),
      provider: new AgentProviderError('invalid_event', 'p', 'reason'),
      openAI: new OpenAIStreamError('overloaded', 'overloaded', 'server_error'),
      validation: new AgentValidationError('state', failure),
    };
    const answers = (check: (value: unknown) => boolean) =>
      Object.entries(errors)
        .filter(([, error]) => check(error))
        .map(([key]) => key);
    expect(answers((value) => AgentError.isInstance(value))).toEqual(Object.keys(errors));
    expect(answers((value) => AgentTransportError.isInstance(value))).toEqual(['transport', 'resume']);
    expect(answers((value) => ResumeTransportError.isInstance(value))).toEqual(['resume']);
    expect(answers((value) => OpenAIStreamError.isInstance(value))).toEqual(['openAI']);
    expect(answers((value) => AgentProviderError.isInstance(value))).toEqual(['provider']);
    expect(answers((value) => AgentProtocolError.isInstance(value))).toEqual([]);
    expect(errors.resume.name).toBe('ResumeTransportError');
    expect(Object.keys(errors.resume)).toContain('name');
  });

  it('refuses look-alikes: a plain Error named like a class, and non-errors', () => {
    expect(AgentError.isInstance(Object.assign(new Error('x'), { name: 'AgentError', code: 'c' }))).toBe(false);
    expect(AgentTransportError.isInstance({ name: 'AgentTransportError' })).toBe(false);
    expect(AgentError.isInstance(null)).toBe(false);
    expect(AgentError.isInstance('AgentError')).toBe(false);
  });

  it('works across two copies of the module, where instanceof does not', async () => {
    vi.resetModules();
    const copy = await import('../transports/AgentTransportError');
    const copyBase = await import('./errors');
    expect(copy.AgentTransportError).not.toBe(AgentTransportError);
    const fromCopy = new copy.AgentTransportError('aborted', 'aborted');
    expect(fromCopy instanceof AgentTransportError).toBe(false);
    expect(AgentTransportError.isInstance(fromCopy)).toBe(true);
    expect(AgentError.isInstance(fromCopy)).toBe(true);
    expect(AgentProviderError.isInstance(fromCopy)).toBe(false);
    expect(copy.AgentTransportError.isInstance(new ResumeTransportError())).toBe(true);
    expect(copyBase.AgentValidationError.isInstance(new AgentProtocolError(issue()))).toBe(false);
    expect(copyBase.AgentProtocolError.isInstance(new AgentProtocolError(issue()))).toBe(true);
  });
});

function issue(): ConstructorParameters<typeof AgentProtocolError>[0] {
  return { code: 'invalid_event', message: 'bad' } as ConstructorParameters<typeof AgentProtocolError>[0];
}
