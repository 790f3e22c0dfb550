import { describe, expect, it } from 'vitest';
import { AGENT_EVENT_TYPES } from './eventSchemas';
import {
  checkAgentEvent,
  checkStreamedDelta,
  isAgentCommand,
  isAgentEvent,
  parseAgentCommand,
  parseAgentEvent,
} from './parseAgentEvent';

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let level = 1; level < depth; level += 1) value = { a: value };
  return value;
}

const envelope = {
  protocolVersion: '0.1',
  eventId: 'e1',
  sessionId: 's1',
  runId: 'r1',
  sequence: 1,
  timestamp: 1_000,
};

const validPayloads: Record<string, unknown> = {
  'session.started': { title: 'Report' },
  'run.started': { input: { prompt: 'hi' } },
  'run.completed': {
    output: 'done',
    usage: { inputTokens: 3, outputTokens: 4, cacheReadTokens: 1 },
    pendingToolCallIds: ['t1'],
  },
  'run.failed': { error: { message: 'boom', code: 'overloaded', retryable: true } },
  'run.cancelled': { reason: 'user' },
  'message.started': { messageId: 'm1', role: 'assistant', content: [{ type: 'text', text: 'a' }] },
  'message.delta': { messageId: 'm1', delta: 'b' },
  'message.completed': { messageId: 'm1' },
  'message.failed': { messageId: 'm1', error: { message: 'x' } },
  'message.cancelled': { messageId: 'm1' },
  'reasoning.started': { reasoningId: 'r1', redacted: true },
  'reasoning.delta': { reasoningId: 'r1', delta: '...' },
  'reasoning.completed': { reasoningId: 'r1', summary: 'thought' },
  'reasoning.failed': { reasoningId: 'r1', error: { message: 'x' } },
  'reasoning.cancelled': { reasoningId: 'r1', reason: 'stop' },
  'tool.requested': { toolCallId: 't1', name: 'search', attempt: 2, retryOf: 't0' },
  'tool.arguments_delta': { toolCallId: 't1', delta: '{"q"' },
  'tool.arguments_completed': { toolCallId: 't1', arguments: '{"q":1}' },
  'tool.running': { toolCallId: 't1' },
  'tool.completed': { toolCallId: 't1', result: { hits: 3 } },
  'tool.failed': { toolCallId: 't1', error: { message: 'timeout', retryable: true } },
  'tool.cancelled': { toolCallId: 't1' },
  'approval.requested': { approvalId: 'a1', toolCallId: 't1', risk: 'high', editable: true, expiresAt: 5, version: 2 },
  'approval.resolved': { approvalId: 'a1', decision: 'modified', data: { q: 2 } },
  'task.created': { taskId: 'k1', title: 'Plan', progress: 0 },
  'task.updated': { taskId: 'k1', progress: 0.5 },
  'task.completed': { taskId: 'k1', result: 'ok' },
  'task.failed': { taskId: 'k1', error: { message: 'x' } },
  'task.cancelled': { taskId: 'k1' },
  'artifact.created': { artifactId: 'f1', mediaType: 'text/markdown', content: '# A' },
  'artifact.updated': { artifactId: 'f1', version: 2, content: '# B' },
  'artifact.completed': { artifactId: 'f1' },
  'artifact.failed': { artifactId: 'f1', error: { message: 'x' } },
  'state.snapshot': { snapshot: { count: 1 } },
  'state.delta': {
    patch: [
      { op: 'replace', path: '/count', value: 2 },
      { op: 'move', from: '/a', path: '/b' },
    ],
  },
  'extension.emitted': { name: 'company.chart', data: { series: [1, 2] } },
  'activity.snapshot': { activityId: 'p1', activityType: 'plan', content: { steps: ['a'] } },
  'activity.delta': { activityId: 'p1', patch: [{ op: 'add', path: '/steps/-', value: 'b' }] },
};

describe('event schemas', () => {
  it('has a valid example for every event type', () => {
    expect(Object.keys(validPayloads).sort()).toEqual([...AGENT_EVENT_TYPES].sort());
  });

  it.each(AGENT_EVENT_TYPES)('accepts a valid %s through both validation paths', (type) => {
    const event = { ...envelope, type, payload: validPayloads[type] };
    expect(parseAgentEvent(event)).toEqual({ success: true, value: event });
    expect(isAgentEvent(event)).toBe(true);
    expect(checkAgentEvent(event)).toBeUndefined();
  });

  it.each([
    ['unknown type', { ...envelope, type: 'message.exploded', payload: {} }, 'type'],
    [
      'wrong protocol version',
      { ...envelope, protocolVersion: '0.2', type: 'run.started', payload: {} },
      'protocolVersion',
    ],
    ['empty event id', { ...envelope, eventId: '', type: 'run.started', payload: {} }, 'eventId'],
    ['fractional sequence', { ...envelope, sequence: 1.5, type: 'run.started', payload: {} }, 'sequence'],
    ['negative sequence', { ...envelope, sequence: -1, type: 'run.started', payload: {} }, 'sequence'],
    [
      'infinite timestamp',
      { ...envelope, timestamp: Number.POSITIVE_INFINITY, type: 'run.started', payload: {} },
      'timestamp',
    ],
    ['array meta', { ...envelope, meta: [], type: 'run.started', payload: {} }, 'meta'],
    ['numeric delta', { ...envelope, type: 'message.delta', payload: { messageId: 'm1', delta: 4 } }, 'payload.delta'],
    ['missing message id', { ...envelope, type: 'message.delta', payload: { delta: 'x' } }, 'payload.messageId'],
    [
      'unknown role',
      { ...envelope, type: 'message.started', payload: { messageId: 'm', role: 'robot' } },
      'payload.role',
    ],
    [
      'flattened part',
      { ...envelope, type: 'message.started', payload: { messageId: 'm', role: 'user', content: [{ type: 'chart' }] } },
      'payload.content',
    ],
    [
      'progress above one',
      { ...envelope, type: 'task.updated', payload: { taskId: 'k', progress: 1.5 } },
      'payload.progress',
    ],
    [
      'unknown decision',
      { ...envelope, type: 'approval.resolved', payload: { approvalId: 'a', decision: 'maybe' } },
      'payload.decision',
    ],
    [
      'unknown patch op',
      { ...envelope, type: 'state.delta', payload: { patch: [{ op: 'merge', path: '' }] } },
      'payload.patch.0.op',
    ],
    [
      'tool error without message',
      { ...envelope, type: 'tool.failed', payload: { toolCallId: 't', error: {} } },
      'payload.error.message',
    ],
  ])('rejects %s and names the path', (_name, event, path) => {
    const result = parseAgentEvent(event);
    expect(result.success).toBe(false);
    if (result.success) return;
    expect(result.error.path).toBe(path);
    expect(result.error.message.startsWith(path)).toBe(true);
    expect(checkAgentEvent(event)?.path).toBe(path);
  });

  it('explains what was expected and what came', () => {
    const result = parseAgentEvent({ ...envelope, type: 'message.delta', payload: { messageId: 'm1', delta: 4 } });
    expect(result).toEqual({
      success: false,
      error: {
        path: 'payload.delta',
        reason: 'expected string, got number',
        message: 'payload.delta: expected string, got number',
      },
    });
    const unknown = parseAgentEvent({ ...envelope, type: 'nope', payload: {} });
    expect(unknown.success === false && unknown.error.reason).toMatch(/^unknown value "nope", expected one of/);
  });

  it('keeps structured content parts, including namespaced ones', () => {
    const content = [
      { type: 'text', text: 'see chart' },
      { type: 'image', url: 'https://example.test/a.png', mediaType: 'image/png' },
      { type: 'file', name: 'a.csv', data: 'a,b' },
      { type: 'company.chart', data: { series: [1, 2] } },
    ];
    const event = { ...envelope, type: 'message.started', payload: { messageId: 'm', role: 'assistant', content } };
    expect(isAgentEvent(event)).toBe(true);
    expect(isAgentEvent({ ...event, payload: { ...event.payload, content: [{ type: 'chart', data: 1 }] } })).toBe(
      false,
    );
    expect(isAgentEvent({ ...event, payload: { ...event.payload, content: [{ type: '.chart', data: 1 }] } })).toBe(
      false,
    );
  });

  it('rejects non-objects', () => {
    for (const value of [null, undefined, 3, 'event', []]) {
      expect(isAgentEvent(value)).toBe(false);
      expect(checkAgentEvent(value)).toBeDefined();
    }
  });
});

describe('plain JSON at the boundary', () => {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;

  it.each([
    [
      'a result nested too deep',
      { type: 'tool.completed', payload: { toolCallId: 't1', result: nested(101) } },
      `payload.result.${Array(100).fill('a').join('.')}`,
      'nested deeper than 100 levels',
    ],
    [
      'a cyclic state snapshot',
      { type: 'state.snapshot', payload: { snapshot: cyclic } },
      'payload.snapshot.self',
      'contains itself (a cycle), which JSON cannot hold',
    ],
    [
      'a bigint input',
      { type: 'run.started', payload: { input: { n: 1n } } },
      'payload.input.n',
      'is a bigint, which JSON cannot hold',
    ],
    [
      'a Map in approval data',
      { type: 'approval.resolved', payload: { approvalId: 'a', decision: 'approved', data: { m: new Map() } } },
      'payload.data.m',
      'is a Map, not a plain object',
    ],
    [
      'undefined in an output array',
      { type: 'run.completed', payload: { output: [1, undefined] } },
      'payload.output.1',
      'is undefined, which JSON cannot hold',
    ],
    [
      'NaN in a patch value',
      { type: 'state.delta', payload: { patch: [{ op: 'add', path: '/n', value: Number.NaN }] } },
      'payload.patch.0.value',
      'is NaN, which JSON cannot hold',
    ],
    [
      'a Set as activity content',
      { type: 'activity.snapshot', payload: { activityId: 'p1', activityType: 'plan', content: new Set() } },
      'payload.content',
      'is a Set, not a plain object',
    ],
    [
      'a Date in meta',
      { type: 'run.started', payload: {}, meta: { at: new Date(0) } },
      'meta.at',
      'is a Date, not a plain object',
    ],
    [
      'a class instance as a delta meta',
      { type: 'message.delta', payload: { messageId: 'm1', delta: 'x' }, meta: new (class Meta {})() },
      'meta',
      'expected record, got object',
    ],
    [
      'a __proto__ key in a delta meta',
      { type: 'message.delta', payload: { messageId: 'm1', delta: 'x' }, meta: JSON.parse('{"__proto__":{"x":1}}') },
      'meta.__proto__',
      'is a "__proto__" key, which is not allowed',
    ],
  ])('refuses %s through both paths, naming the path', (_name, fields, path, reason) => {
    const event = { ...envelope, ...fields };
    const error = { path, reason, message: `${path}: ${reason}` };
    expect(parseAgentEvent(event)).toEqual({ success: false, error });
    expect(checkAgentEvent(event)).toEqual(error);
    expect(isAgentEvent(event)).toBe(false);
    expect(checkStreamedDelta(event)).toBeUndefined();
  });

  it('refuses a 100,000-deep value without overflowing the stack', () => {
    const event = { ...envelope, type: 'state.snapshot', payload: { snapshot: nested(100_000) } };
    const result = parseAgentEvent(event);
    expect(result.success === false && result.error.reason).toBe('nested deeper than 100 levels');
    expect(checkAgentEvent(event)?.reason).toBe('nested deeper than 100 levels');
  });

  it('accepts 100 levels, and optional fields that are undefined (absent)', () => {
    const deep = { ...envelope, type: 'tool.completed', payload: { toolCallId: 't1', result: nested(100) } };
    expect(parseAgentEvent(deep).success).toBe(true);
    expect(checkAgentEvent(deep)).toBeUndefined();
    const absent = { ...envelope, type: 'tool.completed', payload: { toolCallId: 't1', result: undefined } };
    expect(checkAgentEvent(absent)).toBeUndefined();
  });

  it('takes a delta with a plain meta on the fast path, and one with a Date in it nowhere', () => {
    const delta = { ...envelope, type: 'message.delta', payload: { messageId: 'm1', delta: 'x' } };
    expect(checkStreamedDelta({ ...delta, meta: { agui: { subagentRunId: 'r2' } } })).toBe('messageId');
    const dated = { ...delta, meta: { agui: { at: new Date(0) } } };
    expect(checkStreamedDelta(dated)).toBeUndefined();
    expect(checkAgentEvent(dated)).toEqual({
      path: 'meta.agui.at',
      reason: 'is a Date, not a plain object',
      message: 'meta.agui.at: is a Date, not a plain object',
    });
  });
});

describe('command schemas', () => {
  const command = {
    commandProtocol: 'agent-command',
    commandProtocolVersion: '0.1',
    commandId: 'c1',
    idempotencyKey: 'k1',
    sessionId: 's1',
    runId: 'r1',
    timestamp: 1,
  };

  it('accepts the three commands', () => {
    expect(
      isAgentCommand({
        ...command,
        type: 'approval.resolve',
        payload: { approvalId: 'a', decision: 'approved', expectedVersion: 1 },
      }),
    ).toBe(true);
    expect(isAgentCommand({ ...command, type: 'tool.retry', payload: { toolCallId: 't' } })).toBe(true);
    expect(isAgentCommand({ ...command, type: 'run.cancel', payload: {} })).toBe(true);
  });

  it.each([
    [
      'expired is not a user decision',
      { ...command, type: 'approval.resolve', payload: { approvalId: 'a', decision: 'expired' } },
      'payload.decision',
    ],
    [
      'wrong protocol',
      { ...command, commandProtocol: 'agent-event', type: 'run.cancel', payload: {} },
      'commandProtocol',
    ],
    [
      'wrong version',
      { ...command, commandProtocolVersion: '1', type: 'run.cancel', payload: {} },
      'commandProtocolVersion',
    ],
    ['empty idempotency key', { ...command, idempotencyKey: '', type: 'run.cancel', payload: {} }, 'idempotencyKey'],
    ['empty tool call id', { ...command, type: 'tool.retry', payload: { toolCallId: '' } }, 'payload.toolCallId'],
    [
      'object version',
      { ...command, type: 'approval.resolve', payload: { approvalId: 'a', decision: 'approved', expectedVersion: {} } },
      'payload.expectedVersion',
    ],
  ])('rejects %s', (_name, value, path) => {
    const result = parseAgentCommand(value);
    expect(result.success === false && result.error.path).toBe(path);
  });
});
