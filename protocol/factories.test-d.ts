import { describe, expectTypeOf, it } from 'vitest';
import type { AgentCommandOf } from './commandSchemas';
import { createAgentCommandFactory } from './createAgentCommandFactory';
import { createAgentEventFactory } from './createAgentEventFactory';
import type { AgentEvent, AgentEventOf } from './eventSchemas';

const events = createAgentEventFactory({ sessionId: 's1', runId: 'r1' });
const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' });

describe('createAgentEventFactory', () => {
  it('returns the event of the type it is given', () => {
    const delta = events.create('message.delta', { messageId: 'm1', delta: 'Hel' });
    expectTypeOf(delta).toEqualTypeOf<AgentEventOf<'message.delta'>>();
    expectTypeOf(delta.type).toEqualTypeOf<'message.delta'>();
    expectTypeOf(delta.payload).toEqualTypeOf<{ messageId: string; delta: string }>();
    expectTypeOf(delta).toExtend<AgentEvent>();
    expectTypeOf(events.create('run.started', {})).toEqualTypeOf<AgentEventOf<'run.started'>>();
  });

  it("requires that type's payload", () => {
    expectTypeOf(events.create).parameter(1).toBeObject();
    // @ts-expect-error a message delta needs its messageId
    events.create('message.delta', { delta: 'Hel' });
    // @ts-expect-error the delta is text
    events.create('message.delta', { messageId: 'm1', delta: 42 });
    // @ts-expect-error a tool call's payload is not a message delta's
    events.create('message.delta', { toolCallId: 't1', delta: '{' });
    // @ts-expect-error not an event type of the protocol
    events.create('message.appended', { messageId: 'm1', delta: 'Hel' });
  });

  it('takes parentId and meta beside the payload, nothing else', () => {
    events.create('run.started', {}, { parentId: 'run-0', meta: { openai: { model: 'gpt-4o-mini' } } });
    // @ts-expect-error an extra carries parentId and meta only
    events.create('run.started', {}, { sequence: 7 });
  });
});

describe('createAgentCommandFactory', () => {
  it('returns the command of the type it is given', () => {
    const approve = commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' });
    expectTypeOf(approve).toEqualTypeOf<AgentCommandOf<'approval.resolve'>>();
    expectTypeOf(approve.payload.decision).toEqualTypeOf<'approved' | 'rejected' | 'modified'>();
    expectTypeOf(commands.resend(approve)).toEqualTypeOf<AgentCommandOf<'approval.resolve'>>();
    expectTypeOf(commands.create('run.cancel', {})).toEqualTypeOf<AgentCommandOf<'run.cancel'>>();
  });

  it("requires that type's payload", () => {
    // @ts-expect-error a retry names its tool call
    commands.create('tool.retry', {});
    // @ts-expect-error `expired` is the runtime's decision, not a command's
    commands.create('approval.resolve', { approvalId: 'a1', decision: 'expired' });
    // @ts-expect-error not a command type
    commands.create('run.restart', {});
  });
});
