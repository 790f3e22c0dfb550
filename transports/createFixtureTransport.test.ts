import { describe, expect, it } from 'vitest';
import { AgentTransportError } from './AgentTransportError';
import { createAsyncIterableTransport } from './createAsyncIterableTransport';
import { createFixtureTransport, parseFixtureRecording, recordTransport } from './createFixtureTransport';

async function collect<Chunk>(stream: AsyncIterable<Chunk>): Promise<Chunk[]> {
  const out: Chunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

describe('fixture transport', () => {
  const jsonl = '{"at":0,"chunk":{"n":1}}\n\n{"at":30,"chunk":{"n":2}}\r\n{"at":60,"chunk":"three"}\n';

  it('replays a JSONL recording with its timing', async () => {
    const transport = createFixtureTransport(jsonl);
    const start = performance.now();
    const seen: Array<[unknown, number]> = [];
    for await (const chunk of transport.open(undefined, new AbortController().signal))
      seen.push([chunk, performance.now() - start]);
    expect(seen.map(([chunk]) => chunk)).toEqual([{ n: 1 }, { n: 2 }, 'three']);
    expect(seen[2]?.[1]).toBeGreaterThanOrEqual(55);
    expect(transport.kind).toBe('fixture');
  });

  it('plays as fast as possible at speed 0, under the kind it stands in for', async () => {
    const transport = createFixtureTransport(jsonl, { speed: 0, kind: 'sse' });
    expect(await collect(transport.open(undefined, new AbortController().signal))).toEqual([
      { n: 1 },
      { n: 2 },
      'three',
    ]);
    expect(transport.kind).toBe('sse');
  });

  it('stops on abort while waiting for the next frame', async () => {
    const controller = new AbortController();
    const seen: unknown[] = [];
    const stream = createFixtureTransport(jsonl).open(undefined, controller.signal);
    await expect(
      (async () => {
        for await (const chunk of stream) {
          seen.push(chunk);
          controller.abort();
        }
      })(),
    ).rejects.toMatchObject({ code: 'aborted' });
    expect(seen).toEqual([{ n: 1 }]);
  });

  it('refuses a recording line that is not a frame, naming the line', () => {
    expect(() => parseFixtureRecording('{"at":0,"chunk":1}\nnot json')).toThrow(/line 2 is not JSON/);
    expect(() => parseFixtureRecording('{"chunk":1}')).toThrow(AgentTransportError);
    expect(() => createFixtureTransport([], { speed: -1 })).toThrow(RangeError);
  });

  it('records what any transport yields, in the format it replays', async () => {
    let clock = 100;
    const source = createAsyncIterableTransport(async function* (request: { count: number }) {
      for (let index = 0; index < request.count; index += 1) {
        clock += 10;
        yield { index };
      }
    });
    const recorder = recordTransport(source, { now: () => clock });
    expect(await collect(recorder.open({ count: 3 }, new AbortController().signal))).toEqual([
      { index: 0 },
      { index: 1 },
      { index: 2 },
    ]);
    expect(recorder.kind).toBe('async-iterable');
    expect(recorder.toJSONL()).toBe(
      '{"at":10,"chunk":{"index":0}}\n{"at":20,"chunk":{"index":1}}\n{"at":30,"chunk":{"index":2}}\n',
    );
    const replayed = await collect(
      createFixtureTransport(recorder.toJSONL(), { speed: 0 }).open(undefined, new AbortController().signal),
    );
    expect(replayed).toEqual([{ index: 0 }, { index: 1 }, { index: 2 }]);
  });
});
