import { describe, expect, it } from 'vitest';
import { getAgentEntityKey } from '../protocol/getAgentEntityKey';
import { runEvents } from '../tests/support/events';
import { createAgentStore } from './createAgentStore';
import { createToolCallArgumentsPreview } from './createToolCallArgumentsPreview';

describe('createToolCallArgumentsPreview', () => {
  it('previews streaming arguments from the store, then hands over the parsed ones', () => {
    const store = createAgentStore();
    const events = runEvents('r1');
    const key = getAgentEntityKey('r1', 't1');
    const preview = createToolCallArgumentsPreview();
    store.batch([
      events.create('run.started', {}),
      events.create('tool.requested', { toolCallId: 't1', name: 'weather' }),
    ]);
    const seen: unknown[] = [];
    for (const delta of ['{"ci', 'ty":"Pa', 'ris","days":', '3}']) {
      store.dispatch(events.create('tool.arguments_delta', { toolCallId: 't1', delta }));
      seen.push(preview.read(store.getSnapshot().toolCalls[key] as never));
    }
    expect(seen).toEqual([{}, { city: 'Pa' }, { city: 'Paris' }, { city: 'Paris', days: 3 }]);
    store.dispatch(events.create('tool.arguments_completed', { toolCallId: 't1', arguments: '{"city":"Rome"}' }));
    expect(preview.read(store.getSnapshot().toolCalls[key] as never)).toEqual({ city: 'Rome' });
  });
});
