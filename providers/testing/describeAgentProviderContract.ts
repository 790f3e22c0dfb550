import { describe, expect, it } from 'vitest';
import type { AgentProvider } from '../AgentProvider';
import {
  afterFirstChunk,
  failingAfterFirstChunk,
  runAgentProviderFixture,
  withTransport,
} from './runAgentProviderFixture';

export interface AgentProviderFixture<Input> {
  name: string;
  input: Input;
  /** How the run ends; default `completed`. */
  status?: 'completed' | 'failed' | 'cancelled';
}

export interface AgentProviderContractOptions<Input, Request, Chunk, Context> {
  provider: AgentProvider<Input, Request, Chunk, Context>;
  fixtures: readonly AgentProviderFixture<Input>[];
  /** The input of the abort and transport-failure checks; default the first fixture's. */
  interruptInput?: Input;
}

/**
 * The contract every provider's test suite runs (vitest). For each fixture: the events pass
 * `validateAgentProviderEvents`, the store records no issue, the run starts once and ends
 * once, and nothing is left open. Then: an abort mid-stream ends the run `cancelled`, and a
 * transport that breaks mid-stream (a frame it cannot read) ends it `failed`.
 *
 * @example
 * describeAgentProviderContract('openai-compatible', {
 *   provider: createOpenAICompatibleAgentProvider({ baseURL, model: 'm' }),
 *   fixtures: [{ name: 'tool calls', input: { messages } }],
 * });
 */
export function describeAgentProviderContract<Input, Request, Chunk, Context>(
  name: string,
  options: AgentProviderContractOptions<Input, Request, Chunk, Context>,
): void {
  const { provider, fixtures } = options;
  const interruptInput = options.interruptInput ?? fixtures[0]?.input;

  describe(`${name}: provider contract`, () => {
    it('declares a fixture to check', () => {
      expect(fixtures.length).toBeGreaterThan(0);
    });

    for (const fixture of fixtures) {
      it(`${fixture.name}: valid, declared events; one start, one terminal; nothing left open`, async () => {
        const run = await runAgentProviderFixture(provider, fixture.input);
        expect(run.validation).toEqual([]);
        expect(run.state.issues).toEqual([]);
        expect(run.events.filter((event) => event.type === 'run.started')).toHaveLength(1);
        expect(run.events.filter((event) => /^run\.(completed|failed|cancelled)$/.test(event.type))).toHaveLength(1);
        expect(run.activeEntities).toEqual([]);
        expect(run.result.status).toBe(fixture.status ?? 'completed');
      });
    }

    it('an abort mid-stream ends the run cancelled', async () => {
      const controller = new AbortController();
      const aborting = withTransport(
        provider,
        afterFirstChunk(provider.transport, () => controller.abort()),
      );
      const run = await runAgentProviderFixture(aborting, interruptInput as Input, { signal: controller.signal });
      expect(run.result.status).toBe('cancelled');
      expect(run.events.at(-1)?.type).toBe('run.cancelled');
      expect(run.validation).toEqual([]);
      expect(run.activeEntities).toEqual([]);
    });

    it('a transport error mid-stream (not a lost connection) ends the run failed', async () => {
      const failing = withTransport(provider, failingAfterFirstChunk(provider.transport));
      const run = await runAgentProviderFixture(failing, interruptInput as Input);
      expect(run.result.status).toBe('failed');
      expect(run.events.at(-1)?.type).toBe('run.failed');
      expect(run.validation).toEqual([]);
      expect(run.activeEntities).toEqual([]);
    });
  });
}
