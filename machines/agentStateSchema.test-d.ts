import { describe, expectTypeOf, it } from 'vitest';
import type * as z from 'zod/mini';
import type {
  AgentEvent,
  AgentEventOf,
  AgentEventType,
  agentEventSchema,
  agentEventSchemas,
} from '../protocol/eventSchemas';
import type { AgentProtocolIssue } from '../protocol/protocolIssue';
import type {
  AgentActivityState,
  AgentApprovalState,
  AgentArtifactState,
  AgentEntityRef,
  AgentExtensionRecord,
  AgentMessageState,
  AgentReasoningState,
  AgentRunState,
  AgentSessionState,
  AgentState,
  AgentTaskState,
  AgentToolCallState,
} from './agentState';
import type { agentStateSchema } from './agentStateSchema';

/**
 * zod infers an optional field as `field?: T | undefined`; an AgentState record says
 * `field?: T` (exactOptionalPropertyTypes), since its optional fields are absent, never
 * `undefined`, and `parseAgentState` returns a JSON copy, which cannot hold `undefined`.
 * Only the record's own fields are compared that way: nested types (`AgentErrorInfo`,
 * `AgentUsage`, message content) are the schemas' own inferred types on both sides.
 */
type Absent<Shape> = {
  [Field in keyof Shape]: Partial<Pick<Shape, Field>> extends Pick<Shape, Field>
    ? Exclude<Shape[Field], undefined>
    : Shape[Field];
};
type Parsed = z.infer<typeof agentStateSchema>;
type EntryOf<Container> = Container extends { [key: string]: infer Entry } ? Entry : never;
type RecordOf<Container extends keyof Parsed> = Absent<EntryOf<Parsed[Container]>>;

describe('AgentState matches agentStateSchema', () => {
  it('has the same containers', () => {
    expectTypeOf<keyof AgentState>().toEqualTypeOf<keyof Parsed>();
  });

  it('each record is what the schema parses, field by field', () => {
    expectTypeOf<AgentSessionState>().toEqualTypeOf<RecordOf<'sessions'>>();
    expectTypeOf<AgentRunState>().toEqualTypeOf<RecordOf<'runs'>>();
    expectTypeOf<AgentMessageState>().toEqualTypeOf<RecordOf<'messages'>>();
    expectTypeOf<AgentReasoningState>().toEqualTypeOf<RecordOf<'reasoning'>>();
    expectTypeOf<AgentToolCallState>().toEqualTypeOf<RecordOf<'toolCalls'>>();
    expectTypeOf<AgentApprovalState>().toEqualTypeOf<RecordOf<'approvals'>>();
    expectTypeOf<AgentTaskState>().toEqualTypeOf<RecordOf<'tasks'>>();
    expectTypeOf<AgentArtifactState>().toEqualTypeOf<RecordOf<'artifacts'>>();
    expectTypeOf<AgentActivityState>().toEqualTypeOf<RecordOf<'activities'>>();
  });

  it('issues, sequences and shared state are the schema types as they are', () => {
    expectTypeOf<AgentProtocolIssue>().toEqualTypeOf<Parsed['issues'][number]>();
    expectTypeOf<AgentState['lastSequenceByRun']>().toEqualTypeOf<Parsed['lastSequenceByRun']>();
    expectTypeOf<AgentState['state']>().toEqualTypeOf<Parsed['state']>();
  });

  it('order and extensions are the schema types as they are', () => {
    expectTypeOf<AgentEntityRef>().toEqualTypeOf<Parsed['order'][number]>();
    expectTypeOf<AgentExtensionRecord>().toEqualTypeOf<Absent<EntryOf<Parsed['extensions']>[number]>>();
  });
});

describe('AgentEvent matches agentEventSchema', () => {
  it('each event type is what its envelope schema parses', () => {
    expectTypeOf<{ [Type in AgentEventType]: AgentEventOf<Type> }>().toEqualTypeOf<{
      [Type in AgentEventType]: z.infer<(typeof agentEventSchemas)[Type]>;
    }>();
  });

  it('agentEventSchema parses exactly AgentEvent, discriminated by type', () => {
    expectTypeOf<z.infer<typeof agentEventSchema>>().toEqualTypeOf<AgentEvent>();
  });
});
