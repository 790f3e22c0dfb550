// Runs one pipeline once in a fresh process, on SSE bytes from a file, and prints, as JSON, how far its resident
// memory rose: the kernel's high-water mark is reset after the workload is encoded, so
// the peak counts the pipeline alone. One process per measurement, because a heap that
// an earlier pipeline grew hides what the next one needs.
import { readFileSync, writeFileSync } from 'node:fs';
import { agentstate, agUIClient, aiSdk, floor } from './pipelines';

const MEMORY_PIPELINES = [
  'floor:agui',
  'agentstate:agui:end',
  'agentstate:agui:per-read',
  'floor:openai',
  'agentstate:openai:end',
  'agentstate:openai:per-read',
  'floor:ui',
  'ai',
  'agui-client',
] as const;
type MemoryPipeline = (typeof MEMORY_PIPELINES)[number];

function statusKb(field: 'VmRSS' | 'VmHWM'): number {
  const match = readFileSync('/proc/self/status', 'utf8').match(new RegExp(`${field}:\\s+(\\d+) kB`));
  if (!match) throw new Error(`/proc/self/status has no ${field}`);
  return Number(match[1]);
}

async function main(id: MemoryPipeline, file: string): Promise<void> {
  // The bytes come from a file the parent wrote: encoding them here would grow the heap
  // first, and a run that fits in memory the encoding left resident would show no rise.
  const bytes = new Uint8Array(readFileSync(file));
  const text = new TextDecoder().decode(bytes);
  const run: Record<MemoryPipeline, () => unknown> = {
    'floor:agui': () => floor(text),
    'agentstate:agui:end': () => agentstate('agui', bytes, 'end'),
    'agentstate:agui:per-read': () => agentstate('agui', bytes, 'per-read'),
    'floor:openai': () => floor(text),
    'agentstate:openai:end': () => agentstate('openai', bytes, 'end'),
    'agentstate:openai:per-read': () => agentstate('openai', bytes, 'per-read'),
    'floor:ui': () => floor(text),
    ai: () => aiSdk(bytes),
    'agui-client': () => agUIClient(bytes),
  };
  (globalThis as { gc?: () => void }).gc?.();
  // Writing 5 to clear_refs resets the high-water mark to the current RSS (Linux).
  writeFileSync('/proc/self/clear_refs', '5');
  const baseline = statusKb('VmRSS');
  await run[id]();
  const peak = statusKb('VmHWM');
  process.stdout.write(JSON.stringify({ peakRiseMb: Math.max(0, peak - baseline) / 1024 }));
}

const [id, file] = process.argv.slice(2);
if (id === undefined || file === undefined || !(MEMORY_PIPELINES as readonly string[]).includes(id)) {
  throw new Error(`usage: memory.ts <${MEMORY_PIPELINES.join('|')}> <file of SSE bytes>`);
}
await main(id as MemoryPipeline, file);
