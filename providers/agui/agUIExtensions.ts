import type { AGUIEvent } from '@ag-ui/core';
import type { AgentEvent, AgentEventPayloadMap } from '../../protocol/eventSchemas';
import type { AgentRunEmitter } from '../createAgentRunEmitter';
import { subagentMeta } from './agUIContext';

/** An AG-UI event's own fields, without the envelope ones (`type`, `timestamp`, `rawEvent`). */
function fieldsOf(event: AGUIEvent): Record<string, unknown> {
  const { type: _type, timestamp: _timestamp, rawEvent: _rawEvent, ...fields } = event;
  return fields;
}

/**
 * CUSTOM, RAW and SUBAGENT_* as `extension.emitted` (`agui.custom`, `agui.raw`,
 * `agui.subagent_started`, ...), ACTIVITY_SNAPSHOT and ACTIVITY_DELTA as `activity.*`:
 * they stay in the run's order and land in AgentState.
 */
export function mapExtension(event: AGUIEvent, events: AgentRunEmitter): AgentEvent[] {
  const extra = subagentMeta(event);
  switch (event.type) {
    case 'CUSTOM':
      return [
        events.emit(
          'extension.emitted',
          {
            name: 'agui.custom',
            data: event.value === undefined ? { name: event.name } : { name: event.name, value: event.value },
          },
          extra,
        ),
      ];
    case 'RAW': {
      const data: { event?: unknown; source?: unknown } = {};
      if (event.event !== undefined) data.event = event.event;
      if (event.source !== undefined) data.source = event.source;
      return [events.emit('extension.emitted', { name: 'agui.raw', data }, extra)];
    }
    case 'SUBAGENT_STARTED':
    case 'SUBAGENT_FINISHED':
    case 'SUBAGENT_ERROR':
      return [
        events.emit('extension.emitted', {
          name: `agui.${event.type.toLowerCase()}`,
          data: fieldsOf(event),
        }),
      ];
    case 'ACTIVITY_SNAPSHOT': {
      const payload: AgentEventPayloadMap['activity.snapshot'] = {
        activityId: event.messageId,
        activityType: event.activityType,
        content: event.content,
      };
      if (typeof event.replace === 'boolean') payload.replace = event.replace;
      return [events.emit('activity.snapshot', payload, extra)];
    }
    case 'ACTIVITY_DELTA':
      return [
        events.emit(
          'activity.delta',
          {
            activityId: event.messageId,
            activityType: event.activityType,
            patch: event.patch,
          },
          extra,
        ),
      ];
    default:
      return [];
  }
}
