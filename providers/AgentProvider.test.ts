import { describe, expect, it } from 'vitest';
import { isAgentProvider } from './AgentProvider';
import { createLocalAgentProvider } from './local/createLocalAgentProvider';

describe('isAgentProvider', () => {
  it('decides by protocol.name only', () => {
    expect(isAgentProvider(createLocalAgentProvider({ script: { steps: [] } }))).toBe(true);
    expect(isAgentProvider({ protocol: { name: 'agent-event' } })).toBe(true);
    expect(isAgentProvider({ protocol: { name: 'chat' }, transformChunk: () => [] })).toBe(false);
    expect(isAgentProvider({ id: 'agent-event' })).toBe(false);
    expect(isAgentProvider(null)).toBe(false);
    expect(isAgentProvider('agent-event')).toBe(false);
  });
});
