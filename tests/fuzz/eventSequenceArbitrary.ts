import fc from 'fast-check';
import type { AgentCommand } from '../../protocol/commandSchemas';
import { createAgentCommandFactory } from '../../protocol/createAgentCommandFactory';
import { AGENT_EVENT_TYPES } from '../../protocol/eventSchemas';

/**
 * Random, mostly plausible event sequences over a small id space: two sessions, three runs,
 * three entity ids of each kind. Most events follow the lifecycle of the entity they name
 * (as far as the generator itself knows it); the rest are chaos: any event type of the family,
 * redeliveries of earlier events (the same object again), stale and repeated sequences,
 * events of the other session, events after the run's terminal, invalid events, reordered
 * neighbours, hostile JSON patches and values that are not JSON.
 *
 * fast-check shrinks the list of operations; the scenario built from it prints as one line
 * per event (see `formatScenario`).
 */

export const SESSION_IDS = ['s1', 's2'] as const;
export const RUN_IDS = ['r1', 'r2', 'r3'] as const;
/** The session each run belongs to. */
const RUN_SESSION = [0, 0, 1] as const;

/** Every event family, from the protocol's own list of types: a new type joins its family. */
const FAMILY_TYPES: Record<string, string[]> = {};
for (const type of AGENT_EVENT_TYPES) {
  const family = type.slice(0, type.indexOf('.'));
  FAMILY_TYPES[family] ??= [];
  FAMILY_TYPES[family].push(type);
}
const FAMILIES = Object.keys(FAMILY_TYPES);

const ENTITY_PREFIX: Record<string, string> = {
  message: 'm',
  reasoning: 'g',
  tool: 't',
  approval: 'a',
  task: 'k',
  artifact: 'f',
  activity: 'v',
};

function entityId(family: string, index: number): string {
  return `${ENTITY_PREFIX[family] ?? 'x'}${(index % 3) + 1}`;
}

/** How often a family is picked: the streaming ones most, the run's own events rarely. */
const FAMILY_WEIGHT: Record<string, number> = {
  message: 5,
  tool: 5,
  reasoning: 2,
  approval: 2,
  task: 2,
  artifact: 2,
  state: 2,
  activity: 1,
  extension: 1,
  run: 3,
  session: 1,
};

/** Values for the payload fields the schema types as `unknown` (input, result, data, snapshot...). */
export const VALUE_KINDS = ['plain', 'nested', 'date', 'undefined', 'nan', 'map', 'bigint', 'deep'] as const;
export type ValueKind = (typeof VALUE_KINDS)[number];
const META_KINDS = ['none', 'plain', 'date', 'deep'] as const;
type MetaKind = (typeof META_KINDS)[number];
type SequenceMode = 'next' | 'stale' | 'same' | 'jump';

/** Deep enough that `JSON.stringify` and every recursive walk overflow the stack. */
export const DEEP_OBJECT_DEPTH = 20_000;
let deepObject: Record<string, unknown> | undefined;
/** One shared object nested `DEEP_OBJECT_DEPTH` levels deep (built once: it is never changed). */
export function getDeepObject(): Record<string, unknown> {
  if (deepObject === undefined) {
    const root: Record<string, unknown> = {};
    let node = root;
    for (let depth = 1; depth < DEEP_OBJECT_DEPTH; depth += 1) {
      const child: Record<string, unknown> = {};
      node.d = child;
      node = child;
    }
    deepObject = root;
  }
  return deepObject;
}

function nested(depth: number): Record<string, unknown> {
  const root: Record<string, unknown> = { level: 0 };
  let node = root;
  for (let level = 1; level < depth; level += 1) {
    const child: Record<string, unknown> = { level };
    node.child = child;
    node = child;
  }
  return root;
}

function makeValue(kind: ValueKind, n: number): unknown {
  switch (kind) {
    case 'plain':
      return { n, tags: ['a', 'b'], ok: n % 2 === 0, nothing: null };
    case 'nested':
      return nested(40);
    case 'date':
      return { at: new Date(1_700_000_000_000 + n) };
    case 'undefined':
      return { kept: 1, missing: undefined, list: [1, undefined] };
    case 'nan':
      return { ratio: Number.NaN, big: Number.POSITIVE_INFINITY };
    case 'map':
      return { lookup: new Map([['a', 1]]) };
    case 'bigint':
      return { count: BigInt(n) };
    case 'deep':
      return { deep: getDeepObject() };
  }
}

function makeMeta(kind: MetaKind, n: number): Record<string, unknown> | undefined {
  switch (kind) {
    case 'none':
      return undefined;
    case 'plain':
      return { fuzz: { n } };
    case 'date':
      return { receivedAt: new Date(1_700_000_000_000 + n) };
    case 'deep':
      return { deep: getDeepObject() };
  }
}

/** RFC 6902 operations, from ordinary to hostile. */
function patchOperation(index: number, value: () => unknown): Record<string, unknown> {
  const pool: Array<() => Record<string, unknown>> = [
    () => ({ op: 'add', path: '/k0', value: 1 }),
    () => ({ op: 'add', path: '/k1', value: { a: [1, 2] } }),
    () => ({ op: 'replace', path: '/k0', value: 2 }),
    () => ({ op: 'remove', path: '/k1' }),
    () => ({ op: 'test', path: '/k0', value: 1 }),
    () => ({ op: 'move', from: '/k0', path: '/k2' }),
    () => ({ op: 'copy', from: '/k1', path: '/k3' }),
    () => ({ op: 'add', path: '/list/-', value: 'x' }),
    () => ({ op: 'add', path: '', value: { k0: 0, list: [], nested: { a: 1 } } }),
    () => ({ op: 'replace', path: '/nested/a', value: 3 }),
    () => ({ op: 'add', path: '/k0/deeper', value: 1 }),
    // Hostile: the root moved or copied into itself, prototype paths, bad pointers.
    () => ({ op: 'move', from: '', path: '/x' }),
    () => ({ op: 'copy', from: '', path: '/x' }),
    () => ({ op: 'add', path: '/__proto__/polluted', value: true }),
    () => ({ op: 'add', path: '/constructor/prototype/polluted', value: true }),
    () => ({ op: 'replace', path: '/__proto__', value: { polluted: true } }),
    () => ({ op: 'remove', path: '' }),
    () => ({ op: 'add', path: 'x', value: 1 }),
    () => ({ op: 'test', path: '/k0', value: 'nope' }),
    () => ({ op: 'add', path: '/k4', value: value() }),
    () => ({ op: 'move', from: '/nested', path: '/nested/child' }),
    () => ({ op: 'add', path: '/~1escaped~0', value: 1 }),
    () => ({ op: 'copy', from: '/list', path: '/list/0' }),
  ];
  return (pool[index % pool.length] as () => Record<string, unknown>)();
}

function patchFor(pick: number, value: () => unknown): Record<string, unknown>[] {
  const patch = [patchOperation(pick, value)];
  if (Math.floor(pick / 23) % 3 === 2) patch.push(patchOperation(pick * 7 + 3, value));
  return patch;
}

type EntityStatus = 'none' | 'streaming' | 'args' | 'awaiting' | 'running' | 'waiting' | 'open' | 'done';

interface RunModel {
  status: 'new' | 'running' | 'ended';
  sequence: number;
  entities: Map<string, EntityStatus>;
  versions: Map<string, number>;
}

interface BuildContext {
  family: string;
  id: string;
  pick: number;
  mask: number;
  plausible: boolean;
  model: RunModel;
  value: () => unknown;
}

type PayloadBuilder = (context: BuildContext) => Record<string, unknown>;

const error = (pick: number) => ({ message: `boom ${pick}`, code: 'E_FUZZ', retryable: pick % 2 === 1 });
const withReason = (pick: number) => (pick % 2 === 1 ? { reason: 'user' } : {});

function pendingIds(context: BuildContext, family: 'tool' | 'approval'): string[] {
  if (context.mask >= 64) {
    // Plausible: what the generator believes is still open (a runtime may list a running client tool).
    const open: EntityStatus[] = family === 'tool' ? ['awaiting', 'running', 'args'] : ['waiting'];
    return [0, 1, 2]
      .map((index) => entityId(family, index))
      .filter((id) => open.includes(context.model.entities.get(`${family}:${id}`) ?? 'none'));
  }
  const bits = family === 'tool' ? context.mask & 7 : (context.mask >> 3) & 7;
  return [0, 1, 2].filter((index) => (bits >> index) & 1).map((index) => entityId(family, index));
}

/** The payload of each event type; a test checks that every type of the protocol has one. */
export const PAYLOAD_BUILDERS: Record<string, PayloadBuilder> = {
  'session.started': ({ pick, value }) => (pick % 2 === 1 ? { title: `Chat ${pick}`, data: value() } : {}),
  'run.started': ({ pick, value }) => (pick % 3 === 2 ? { input: value(), title: 'Run' } : { input: value() }),
  'run.completed': (context) => {
    const payload: Record<string, unknown> = { output: context.value(), usage: { inputTokens: 3, outputTokens: 4 } };
    const tools = pendingIds(context, 'tool');
    const approvals = pendingIds(context, 'approval');
    if (tools.length > 0) payload.pendingToolCallIds = tools;
    if (approvals.length > 0) payload.pendingApprovalIds = approvals;
    return payload;
  },
  'run.failed': ({ pick }) => ({ error: error(pick) }),
  'run.cancelled': ({ pick }) => withReason(pick),

  'message.started': ({ id, pick, value }) => {
    const payload: Record<string, unknown> = {
      messageId: id,
      role: ['assistant', 'assistant', 'user', 'tool', 'system'][pick % 5],
    };
    if (pick % 4 === 1) payload.content = 'Hello';
    if (pick % 4 === 2)
      payload.content = [
        { type: 'text', text: 'Hi' },
        { type: 'company.chart', data: value() },
      ];
    if (pick % 7 === 3) payload.toolCallId = 't1';
    return payload;
  },
  'message.delta': ({ id, pick }) => ({ messageId: id, delta: `d${pick % 10} ` }),
  'message.completed': ({ id, pick }) => (pick % 3 === 2 ? { messageId: id, content: 'Done.' } : { messageId: id }),
  'message.failed': ({ id, pick }) => ({ messageId: id, error: error(pick) }),
  'message.cancelled': ({ id, pick }) => ({ messageId: id, ...withReason(pick) }),

  'reasoning.started': ({ id, pick }) =>
    pick % 4 === 3 ? { reasoningId: id, redacted: true, content: 'sealed' } : { reasoningId: id },
  'reasoning.delta': ({ id, pick }) => ({ reasoningId: id, delta: `think ${pick % 10} ` }),
  'reasoning.completed': ({ id, pick }) =>
    pick % 3 === 2 ? { reasoningId: id, summary: 'Thought.' } : { reasoningId: id },
  'reasoning.failed': ({ id, pick }) => ({ reasoningId: id, error: error(pick) }),
  'reasoning.cancelled': ({ id, pick }) => ({ reasoningId: id, ...withReason(pick) }),

  'tool.requested': ({ id, pick }) => {
    const payload: Record<string, unknown> = { toolCallId: id, name: 'search' };
    if (pick % 3 === 2) payload.arguments = '{"q":';
    if (pick % 5 === 4) {
      payload.attempt = 2;
      payload.retryOf = entityId('tool', pick + 1);
    }
    if (pick % 7 === 6) payload.messageId = 'm1';
    return payload;
  },
  'tool.arguments_delta': ({ id, pick }) => ({
    toolCallId: id,
    delta: ['{"q":1}', '{"q"', ':2}', 'not json'][pick % 4],
  }),
  'tool.arguments_completed': ({ id, pick }) =>
    pick % 4 === 3 ? { toolCallId: id, arguments: '{"q":3}' } : { toolCallId: id },
  'tool.running': ({ id }) => ({ toolCallId: id }),
  'tool.completed': ({ id, value }) => ({ toolCallId: id, result: value() }),
  'tool.failed': ({ id, pick }) => ({ toolCallId: id, error: error(pick) }),
  'tool.cancelled': ({ id, pick }) => ({ toolCallId: id, ...withReason(pick) }),

  'approval.requested': ({ id, pick, value }) => {
    const payload: Record<string, unknown> = { approvalId: id, toolCallId: entityId('tool', pick), description: 'Ok?' };
    if (pick % 3 === 2) payload.editable = pick % 2 === 1;
    if (pick % 4 === 3) payload.expiresAt = 5_000;
    if (pick % 5 === 4) payload.version = pick % 2 === 1 ? 1 : 'v1';
    if (pick % 6 === 5) payload.data = value();
    return payload;
  },
  'approval.resolved': ({ id, pick, value }) => {
    const payload: Record<string, unknown> = {
      approvalId: id,
      decision: ['approved', 'rejected', 'modified', 'expired'][pick % 4],
    };
    if (pick % 3 === 2) payload.data = value();
    return payload;
  },

  'task.created': ({ id, pick, value }) => {
    const payload: Record<string, unknown> = { taskId: id, title: 'Task' };
    if (pick % 2 === 1) payload.progress = 0.5;
    if (pick % 3 === 2) payload.parentTaskId = entityId('task', pick + 1);
    if (pick % 4 === 3) payload.data = value();
    return payload;
  },
  'task.updated': ({ id, pick, value }) =>
    pick % 3 === 2 ? { taskId: id, data: value() } : { taskId: id, progress: (pick % 11) / 10 },
  'task.completed': ({ id, value }) => ({ taskId: id, result: value() }),
  'task.failed': ({ id, pick }) => ({ taskId: id, error: error(pick) }),
  'task.cancelled': ({ id, pick }) => ({ taskId: id, ...withReason(pick) }),

  'artifact.created': ({ id, pick, value }) => {
    const payload: Record<string, unknown> = { artifactId: id, mediaType: 'text/plain', title: 'Notes', content: 'a' };
    if (pick % 4 === 3) payload.version = 2;
    if (pick % 5 === 4) payload.data = value();
    return payload;
  },
  'artifact.updated': ({ id, pick, plausible, model }) => {
    if (pick % 5 === 4) return { artifactId: id, content: 'b' };
    const current = model.versions.get(id) ?? 1;
    return { artifactId: id, version: plausible ? current + 1 : 1 + (pick % 3), content: `v${pick}` };
  },
  'artifact.completed': ({ id, pick }) => (pick % 2 === 1 ? { artifactId: id, content: 'final' } : { artifactId: id }),
  'artifact.failed': ({ id, pick }) => ({ artifactId: id, error: error(pick) }),

  'state.snapshot': ({ pick, value }) => ({
    snapshot: pick % 3 === 2 ? value() : { k0: 1, k1: { a: [1] }, list: [1, 2], nested: { a: 1 } },
  }),
  'state.delta': ({ pick, value }) => ({ patch: patchFor(pick, value) }),

  'extension.emitted': ({ pick, value }) => ({ name: pick % 2 === 1 ? 'company.chart' : 'acme.ping', data: value() }),
  'activity.snapshot': ({ id, pick, value }) => {
    const payload: Record<string, unknown> = {
      activityId: id,
      activityType: 'plan',
      content: pick % 3 === 2 ? value() : { k0: 1, list: ['step'], nested: { a: 1 } },
    };
    if (pick % 4 === 3) payload.replace = false;
    return payload;
  },
  'activity.delta': ({ id, pick, value }) => ({ activityId: id, patch: patchFor(pick, value) }),
};

/** What the generator believes happens to an entity when its event is applied. */
function nextStatus(type: string, current: EntityStatus): EntityStatus {
  const action = type.slice(type.indexOf('.') + 1);
  switch (action) {
    case 'started':
      return 'streaming';
    case 'requested':
      return type === 'tool.requested' ? 'args' : 'waiting';
    case 'created':
      return type === 'artifact.created' ? 'open' : 'running';
    case 'arguments_completed':
      return 'awaiting';
    case 'running':
      return 'running';
    case 'snapshot':
      return 'open';
    case 'delta':
    case 'arguments_delta':
    case 'updated':
      return current;
    default:
      return 'done';
  }
}

/**
 * The lifecycle-respecting choices for an entity in a status (repeats weigh the choice). An
 * open tool call or approval may also end its run (`run.completed` listing what is open), as a
 * runtime does when it leaves client-side tools or an interrupt to the application.
 */
function plausibleTypes(family: string, status: EntityStatus): string[] | undefined {
  switch (family) {
    case 'message':
    case 'reasoning':
      if (status === 'none') return [`${family}.started`];
      if (status === 'streaming') {
        const delta = `${family}.delta`;
        return [
          delta,
          delta,
          delta,
          `${family}.completed`,
          `${family}.completed`,
          `${family}.failed`,
          `${family}.cancelled`,
        ];
      }
      return undefined;
    case 'tool':
      if (status === 'none') return ['tool.requested'];
      if (status === 'args') {
        return [
          'tool.arguments_delta',
          'tool.arguments_delta',
          'tool.arguments_completed',
          'tool.arguments_completed',
          'tool.arguments_completed',
          'tool.running',
          'tool.completed',
          'tool.failed',
          'tool.cancelled',
        ];
      }
      if (status === 'awaiting') {
        return [
          'tool.running',
          'tool.running',
          'tool.running',
          'tool.completed',
          'tool.failed',
          'tool.cancelled',
          'run.completed',
        ];
      }
      if (status === 'running') {
        return ['tool.completed', 'tool.completed', 'tool.failed', 'tool.cancelled', 'run.completed'];
      }
      return undefined;
    case 'approval':
      if (status === 'none') return ['approval.requested'];
      if (status === 'waiting') return ['approval.resolved', 'approval.resolved', 'run.completed'];
      return undefined;
    case 'task':
      if (status === 'none') return ['task.created'];
      if (status === 'running')
        return ['task.updated', 'task.updated', 'task.completed', 'task.failed', 'task.cancelled'];
      return undefined;
    case 'artifact':
      if (status === 'none') return ['artifact.created'];
      if (status === 'open') return ['artifact.updated', 'artifact.updated', 'artifact.completed', 'artifact.failed'];
      return undefined;
    case 'activity':
      return status === 'none' ? ['activity.snapshot'] : ['activity.snapshot', 'activity.delta', 'activity.delta'];
    case 'state':
      return ['state.snapshot', 'state.delta', 'state.delta', 'state.delta'];
    default:
      return undefined;
  }
}

/** One way to break an event; `label` is printed with the counterexample. */
interface Mutation {
  label: string;
  apply: (event: Record<string, unknown>) => unknown;
}

function firstPayloadKey(event: Record<string, unknown>): string {
  const payload = event.payload as Record<string, unknown>;
  return Object.keys(payload)[0] ?? 'id';
}

function set(field: string, value: unknown): (event: Record<string, unknown>) => unknown {
  return (event) => ({ ...event, [field]: value });
}

function without(field: string): (event: Record<string, unknown>) => unknown {
  return (event) => {
    const copy = { ...event };
    delete copy[field];
    return copy;
  };
}

function setPayload(value: (key: string) => unknown): (event: Record<string, unknown>) => unknown {
  return (event) => {
    const key = firstPayloadKey(event);
    return { ...event, payload: { ...(event.payload as Record<string, unknown>), [key]: value(key) } };
  };
}

const MUTATIONS: Mutation[] = [
  { label: 'null', apply: () => null },
  { label: 'a number', apply: () => 42 },
  { label: 'a string', apply: () => 'message.delta' },
  { label: 'an array', apply: (event) => [event] },
  { label: 'undefined', apply: () => undefined },
  { label: 'no eventId', apply: without('eventId') },
  { label: 'empty eventId', apply: set('eventId', '') },
  { label: 'numeric eventId', apply: set('eventId', 7) },
  { label: 'no runId', apply: without('runId') },
  { label: 'numeric runId', apply: set('runId', 3) },
  { label: 'empty sessionId', apply: set('sessionId', '') },
  { label: 'null sessionId', apply: set('sessionId', null) },
  { label: 'negative sequence', apply: set('sequence', -1) },
  { label: 'fractional sequence', apply: set('sequence', 1.5) },
  { label: 'string sequence', apply: set('sequence', '3') },
  { label: 'NaN sequence', apply: set('sequence', Number.NaN) },
  { label: 'unsafe sequence', apply: set('sequence', 2 ** 53 + 2) },
  { label: 'string timestamp', apply: set('timestamp', 'now') },
  { label: 'infinite timestamp', apply: set('timestamp', Number.POSITIVE_INFINITY) },
  { label: 'protocol 0.2', apply: set('protocolVersion', '0.2') },
  { label: 'unknown type', apply: set('type', 'message.exploded') },
  { label: 'type __proto__', apply: set('type', '__proto__') },
  { label: 'type toString', apply: set('type', 'toString') },
  { label: 'no payload', apply: without('payload') },
  { label: 'null payload', apply: set('payload', null) },
  { label: 'array payload', apply: set('payload', []) },
  { label: 'array meta', apply: set('meta', []) },
  { label: 'string meta', apply: set('meta', 'meta') },
  { label: 'numeric parentId', apply: set('parentId', 5) },
  {
    label: 'payload id missing',
    apply: (event) => {
      const payload = { ...(event.payload as Record<string, unknown>) };
      delete payload[firstPayloadKey(event)];
      return { ...event, payload };
    },
  },
  { label: 'payload id a number', apply: setPayload(() => 5) },
  { label: 'payload id empty', apply: setPayload(() => '') },
  {
    label: 'numeric delta',
    apply: (event) => ({ ...event, payload: { ...(event.payload as Record<string, unknown>), delta: 5 } }),
  },
  { label: 'extra envelope field', apply: set('extra', { kept: false }) },
  { label: 'string payload', apply: set('payload', 'text') },
];

const COMMAND_TYPES = ['approval.resolve', 'tool.retry', 'run.cancel'] as const;

export type FuzzOp =
  | {
      t: 'event';
      run: number;
      family: string;
      entity: number;
      pick: number;
      mask: number;
      /** Address the entity of the previous entity event again, so lifecycles go deep. */
      follow: boolean;
      chaos: boolean;
      sequence: SequenceMode;
      foreign: boolean;
      value: ValueKind;
      meta: MetaKind;
    }
  | { t: 'invalid'; run: number; family: string; entity: number; pick: number; mutation: number }
  | { t: 'redeliver'; back: number }
  | { t: 'swap'; back: number }
  | { t: 'command'; run: number; command: number; entity: number; action: 'can' | 'submit' | 'settle'; pick: number };

export type FuzzStep =
  | { kind: 'event'; event: unknown; note?: string }
  | { kind: 'command'; action: 'can' | 'submit' | 'settle'; command: unknown };

export interface FuzzScenario {
  /** Events and commands in order. */
  steps: FuzzStep[];
  /** The events alone, in order; a redelivery is the same object as its first delivery. */
  events: unknown[];
}

/**
 * A debugging aid, never needed for `npm test`: `AGENT_MACHINES_FUZZ_WITHOUT=deep,date` leaves those
 * value kinds out (`plain` takes their place), so a failure they cause does not hide others.
 */
const WITHOUT = new Set((process.env.AGENT_MACHINES_FUZZ_WITHOUT ?? '').split(',').map((name) => name.trim()));

function weighted<T>(choices: Array<[T, number]>): fc.Arbitrary<T> {
  const kept = choices.filter(([value], index) => index === 0 || !WITHOUT.has(String(value)));
  return fc.oneof(...kept.map(([value, weight]) => ({ arbitrary: fc.constant(value), weight })));
}

const familyArbitrary = weighted(FAMILIES.map((family) => [family, FAMILY_WEIGHT[family] ?? 1]));

/**
 * Runs and entity ids are skewed towards the first, so that sequences go deep into a few
 * lifecycles rather than start many entities and leave them.
 */
const runArbitrary = weighted([
  [0, 6],
  [1, 3],
  [2, 2],
]);
const entityArbitrary = weighted([
  [0, 6],
  [1, 3],
  [2, 1],
]);

const eventOp: fc.Arbitrary<FuzzOp> = fc.record({
  t: fc.constant('event' as const),
  run: runArbitrary,
  family: familyArbitrary,
  entity: entityArbitrary,
  pick: fc.nat({ max: 1023 }),
  mask: fc.nat({ max: 127 }),
  follow: weighted([
    [false, 1],
    [true, 1],
  ]),
  chaos: weighted([
    [false, 9],
    [true, 1],
  ]),
  sequence: weighted<SequenceMode>([
    ['next', 60],
    ['stale', 1],
    ['same', 1],
    ['jump', 1],
  ]),
  foreign: weighted([
    [false, 40],
    [true, 1],
  ]),
  // Values that are not JSON are occasional: about one event in seventy.
  value: weighted<ValueKind>([
    ['plain', 400],
    ['nested', 10],
    ['date', 1],
    ['undefined', 1],
    ['nan', 1],
    ['map', 1],
    ['bigint', 1],
    ['deep', 1],
  ]),
  meta: weighted<MetaKind>([
    ['none', 150],
    ['plain', 30],
    ['date', 1],
    ['deep', 1],
  ]),
});

const invalidOp: fc.Arbitrary<FuzzOp> = fc.record({
  t: fc.constant('invalid' as const),
  run: runArbitrary,
  family: familyArbitrary,
  entity: entityArbitrary,
  pick: fc.nat({ max: 1023 }),
  mutation: fc.nat({ max: MUTATIONS.length - 1 }),
});

const commandOp: fc.Arbitrary<FuzzOp> = fc.record({
  t: fc.constant('command' as const),
  run: runArbitrary,
  command: fc.nat({ max: COMMAND_TYPES.length - 1 }),
  entity: entityArbitrary,
  action: fc.constantFrom('can' as const, 'submit' as const, 'settle' as const),
  pick: fc.nat({ max: 1023 }),
});

export interface ScenarioOptions {
  maxLength?: number;
  /** Interleave `can`/`submit`/`settle` commands (for the properties that fuzz commands too). */
  commands?: boolean;
}

/** A list of operations; build it into events with `buildScenario`. */
export function fuzzOpsArbitrary(options: ScenarioOptions = {}): fc.Arbitrary<FuzzOp[]> {
  const ops: Array<fc.WeightedArbitrary<FuzzOp>> = [
    { arbitrary: eventOp, weight: 20 },
    { arbitrary: invalidOp, weight: 1 },
    { arbitrary: fc.record({ t: fc.constant('redeliver' as const), back: fc.nat({ max: 63 }) }), weight: 2 },
    { arbitrary: fc.record({ t: fc.constant('swap' as const), back: fc.nat({ max: 2 }) }), weight: 1 },
  ];
  if (options.commands) ops.push({ arbitrary: commandOp, weight: 2 });
  return fc.array(fc.oneof(...ops), { maxLength: options.maxLength ?? 40, size: 'max' });
}

/** A scenario, printed one event per line in the counterexample. */
export function scenarioArbitrary(options: ScenarioOptions = {}): fc.Arbitrary<FuzzScenario> {
  return fuzzOpsArbitrary(options).map(buildScenario);
}

/** Builds the events (and commands) an operation list describes. Deterministic. */
export function buildScenario(ops: readonly FuzzOp[]): FuzzScenario {
  const models: RunModel[] = RUN_IDS.map(() => ({
    status: 'new',
    sequence: 0,
    entities: new Map(),
    versions: new Map(),
  }));
  const steps: FuzzStep[] = [];
  const eventSteps: number[] = [];
  let nextEventId = 1;
  let clock = 1_000;
  let commandCount = 0;
  let previous: { run: number; family: string; entity: number } | undefined;
  const submitted = new Map<string, AgentCommand>();

  function envelope(run: number, type: string, sequence: number, sessionId: string, payload: unknown) {
    clock += 1;
    return {
      protocolVersion: '0.1',
      type,
      eventId: `e${nextEventId++}`,
      sessionId,
      runId: RUN_IDS[run] as string,
      sequence,
      timestamp: clock,
      payload,
    } as Record<string, unknown>;
  }

  function pushEvent(event: unknown, note?: string): void {
    eventSteps.push(steps.length);
    steps.push(note === undefined ? { kind: 'event', event } : { kind: 'event', event, note });
  }

  for (const op of ops) {
    if (op.t === 'redeliver') {
      if (eventSteps.length === 0) continue;
      const index = eventSteps[eventSteps.length - 1 - (op.back % eventSteps.length)] as number;
      const step = steps[index] as FuzzStep & { kind: 'event' };
      pushEvent(step.event, 'again');
      continue;
    }
    if (op.t === 'swap') {
      if (eventSteps.length < 2) continue;
      const last = eventSteps.length - 1;
      const other = Math.max(0, last - 1 - op.back);
      const a = eventSteps[last] as number;
      const b = eventSteps[other] as number;
      [steps[a], steps[b]] = [steps[b] as FuzzStep, steps[a] as FuzzStep];
      continue;
    }
    const at =
      op.t === 'event' && op.follow && previous !== undefined
        ? previous
        : { run: op.run, family: op.t === 'command' ? 'command' : op.family, entity: op.entity };
    if (op.t === 'event' && at.family in ENTITY_PREFIX) previous = at;
    const model = models[at.run] as RunModel;
    const home = SESSION_IDS[RUN_SESSION[at.run] as number] as string;
    if (op.t === 'command') {
      const type = COMMAND_TYPES[op.command] as (typeof COMMAND_TYPES)[number];
      const factory = createAgentCommandFactory({
        sessionId: home,
        runId: RUN_IDS[op.run] as string,
        now: () => clock,
        createCommandId: () => `c${++commandCount}`,
      });
      const target = `${op.run}:${type}:${op.entity}`;
      let command: AgentCommand =
        type === 'approval.resolve'
          ? factory.create(type, {
              approvalId: entityId('approval', op.entity),
              decision: (['approved', 'rejected', 'modified'] as const)[op.pick % 3] ?? 'approved',
              ...(op.pick % 4 === 3 ? { expectedVersion: 1 } : {}),
            })
          : type === 'tool.retry'
            ? factory.create(type, { toolCallId: entityId('tool', op.entity) })
            : factory.create(type, { reason: 'user' });
      if (op.action === 'settle' && op.pick % 2 === 1) command = submitted.get(target) ?? command;
      if (op.action === 'submit') submitted.set(target, command);
      const broken = op.pick % 17 === 16;
      steps.push({ kind: 'command', action: op.action, command: broken ? { ...command, commandId: 5 } : command });
      continue;
    }
    const id = entityId(at.family, at.entity);
    const entityKey = `${at.family}:${id}`;
    if (op.t === 'invalid') {
      const types = FAMILY_TYPES[at.family] as string[];
      const type = types[op.pick % types.length] as string;
      const value = () => makeValue('plain', op.pick);
      const builder: PayloadBuilder = PAYLOAD_BUILDERS[type] ?? (() => ({}));
      const context = { family: at.family, id, pick: op.pick, mask: op.pick & 127, plausible: false, model, value };
      const event = envelope(at.run, type, model.sequence + 1, home, builder(context));
      const mutation = MUTATIONS[op.mutation % MUTATIONS.length] as Mutation;
      pushEvent(mutation.apply(event), `invalid: ${mutation.label}`);
      continue;
    }
    // A plausible event of an entity family in a run that has not started starts the run.
    let family = at.family;
    let plausible = !op.chaos;
    if (plausible && model.status === 'new' && family !== 'session') family = 'run';
    const status = model.entities.get(entityKey) ?? 'none';
    let type: string;
    const choices = plausible
      ? family === 'run'
        ? model.status === 'new'
          ? ['run.started']
          : model.status === 'running'
            ? ['run.completed', 'run.completed', 'run.completed', 'run.failed', 'run.cancelled']
            : undefined
        : family === 'session'
          ? ['session.started']
          : family === 'extension'
            ? ['extension.emitted']
            : plausibleTypes(family, status)
      : undefined;
    if (choices === undefined) {
      plausible = false;
      const types = FAMILY_TYPES[family] as string[];
      type = types[op.pick % types.length] as string;
    } else {
      type = choices[op.pick % choices.length] as string;
    }
    // An entity that ends its run: the terminal lists what the generator believes is open.
    const mask = family !== 'run' && type === 'run.completed' ? op.mask | 64 : op.mask;
    if (type.startsWith('run.')) family = 'run';
    const value = () => makeValue(op.value, op.pick);
    const builder: PayloadBuilder = PAYLOAD_BUILDERS[type] ?? (() => ({}));
    const payload = builder({ family, id, pick: op.pick, mask, plausible, model, value });
    const last = model.sequence;
    const sequence =
      op.sequence === 'next'
        ? last + 1
        : op.sequence === 'same'
          ? last
          : op.sequence === 'stale'
            ? Math.max(0, last - 1 - (op.pick % 3))
            : last + 2 + (op.pick % 4);
    const sessionId = op.foreign ? (SESSION_IDS[1 - (RUN_SESSION[at.run] as number)] as string) : home;
    const event = envelope(at.run, type, sequence, sessionId, payload);
    const meta = makeMeta(op.meta, op.pick);
    if (meta !== undefined) event.meta = meta;
    if (op.pick % 29 === 28) event.parentId = 'm1';
    pushEvent(event);
    model.sequence = Math.max(model.sequence, sequence);
    // What the store should accept moves the generator's model; what it refuses does not.
    if (op.foreign || sequence <= last) continue;
    if (type === 'run.started' && model.status === 'new') model.status = 'running';
    else if (type.startsWith('run.') && type !== 'run.started' && model.status === 'running') model.status = 'ended';
    else if (model.status === 'running' && family in ENTITY_PREFIX) {
      model.entities.set(entityKey, nextStatus(type, status));
      if (type === 'artifact.created') model.versions.set(id, (payload.version as number | undefined) ?? 1);
      if (type === 'artifact.updated' && typeof payload.version === 'number') model.versions.set(id, payload.version);
    }
  }
  const scenario: FuzzScenario = {
    steps,
    events: steps.flatMap((step) => (step.kind === 'event' ? [step.event] : [])),
  };
  Object.defineProperty(scenario, fc.toStringMethod, { value: () => formatScenario(scenario), enumerable: false });
  return scenario;
}

/** A short, safe rendering of any value: never recursive beyond a few levels, never throws. */
export function describeValue(value: unknown, depth = 0): string {
  if (value === getDeepObject()) return `<object nested ${DEEP_OBJECT_DEPTH} levels deep>`;
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value !== 'object') return typeof value;
  if (value instanceof Date) return `Date(${value.toISOString()})`;
  if (value instanceof Map) return `Map(${value.size})`;
  if (depth >= 4) return Array.isArray(value) ? '[…]' : '{…}';
  if (Array.isArray(value)) return `[${value.map((item) => describeValue(item, depth + 1)).join(',')}]`;
  const entries = Object.entries(value).map(([key, item]) => `${key}:${describeValue(item, depth + 1)}`);
  return `{${entries.join(',')}}`;
}

function describeEvent(event: unknown): string {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) return describeValue(event);
  const { protocolVersion, type, eventId, sessionId, runId, sequence, timestamp, payload, meta, parentId, ...rest } =
    event as Record<string, unknown>;
  const standard =
    protocolVersion === '0.1' && typeof type === 'string' && typeof eventId === 'string' && typeof runId === 'string';
  if (!standard) return describeValue(event);
  let text = `${type} ${String(sessionId)}/${runId} seq=${describeValue(sequence)} id=${eventId} ${describeValue(payload)}`;
  if (meta !== undefined) text += ` meta=${describeValue(meta)}`;
  if (parentId !== undefined) text += ` parentId=${describeValue(parentId)}`;
  if (typeof timestamp !== 'number') text += ` timestamp=${describeValue(timestamp)}`;
  if (Object.keys(rest).length > 0) text += ` extra=${describeValue(rest)}`;
  return text;
}

/** One line per step: `#3 message.delta s1/r1 seq=4 id=e4 {...}`, with redeliveries marked. */
export function formatScenario(scenario: FuzzScenario): string {
  const first = new Map<unknown, number>();
  const lines = scenario.steps.map((step, index) => {
    if (step.kind === 'command') return `#${index} store.${step.action}(${describeValue(step.command)})`;
    const earlier = typeof step.event === 'object' && step.event !== null ? first.get(step.event) : undefined;
    if (earlier !== undefined) return `#${index} again #${earlier} (redelivered)`;
    if (typeof step.event === 'object' && step.event !== null) first.set(step.event, index);
    const note = step.note === undefined ? '' : `   [${step.note}]`;
    return `#${index} ${describeEvent(step.event)}${note}`;
  });
  return `${scenario.steps.length} steps:\n${lines.join('\n')}`;
}
