import type { AgentUsage } from '../../protocol/eventSchemas';

const tokenCount = (value: unknown): number | undefined =>
  Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : undefined;

/**
 * The counters of Anthropic's usage that the protocol names; the whole object goes to the
 * meta. Anthropic's `input_tokens` leaves out the tokens read from and written to the cache;
 * `inputTokens` counts every input token, as OpenAI's `prompt_tokens` does, so the two agree.
 */
export function anthropicUsage(raw: Record<string, unknown>): AgentUsage {
  const usage: AgentUsage = {};
  const uncached = tokenCount(raw.input_tokens);
  const output = tokenCount(raw.output_tokens);
  const cacheRead = tokenCount(raw.cache_read_input_tokens);
  const cacheWrite = tokenCount(raw.cache_creation_input_tokens);
  const input = uncached === undefined ? undefined : uncached + (cacheRead ?? 0) + (cacheWrite ?? 0);
  if (input !== undefined) usage.inputTokens = input;
  if (output !== undefined) usage.outputTokens = output;
  if (input !== undefined && output !== undefined) usage.totalTokens = input + output;
  if (cacheRead !== undefined) usage.cacheReadTokens = cacheRead;
  if (cacheWrite !== undefined) usage.cacheWriteTokens = cacheWrite;
  return usage;
}
