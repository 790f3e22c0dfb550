// Runs one pipeline once in a fresh process, on SSE bytes from a file, and prints as JSON
// how far its resident memory rose: the kernel's high-water mark is reset after the bytes
// are loaded, so the peak counts the pipeline alone. One process per measurement, because
// a heap that an earlier pipeline grew hides what the next one needs.
import { readFileSync, writeFileSync } from 'node:fs';
import { AGUI_CLIENT_PIPELINE, PIPELINES, type PipelineSpec } from './pipelines';

function statusKb(field: 'VmRSS' | 'VmHWM'): number {
  const match = readFileSync('/proc/self/status', 'utf8').match(new RegExp(`${field}:\\s+(\\d+) kB`));
  if (!match) throw new Error(`/proc/self/status has no ${field}`);
  return Number(match[1]);
}

async function main(spec: PipelineSpec, file: string): Promise<void> {
  // The bytes come from a file the parent wrote: encoding them here would grow the heap
  // first, and a run that fits in memory the encoding left resident would show no rise.
  const bytes = new Uint8Array(readFileSync(file));
  const text = new TextDecoder().decode(bytes);
  (globalThis as { gc?: () => void }).gc?.();
  // Writing 5 to clear_refs resets the high-water mark to the current RSS (Linux).
  writeFileSync('/proc/self/clear_refs', '5');
  const baseline = statusKb('VmRSS');
  await spec.run({ text, bytes });
  const peak = statusKb('VmHWM');
  process.stdout.write(JSON.stringify({ peakRiseMb: Math.max(0, peak - baseline) / 1024 }));
}

const [id, file] = process.argv.slice(2);
const specs = [...PIPELINES, AGUI_CLIENT_PIPELINE];
const spec = specs.find((candidate) => candidate.id === id);
if (spec === undefined || file === undefined) {
  throw new Error(`usage: memory.ts <${specs.map((candidate) => candidate.id).join('|')}> <file of SSE bytes>`);
}
await main(spec, file);
