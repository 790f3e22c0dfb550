// The pipelines the benchmark compares, each consuming the same bytes end to end.
import { HttpAgent } from '@ag-ui/client';
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from 'ai';
import { createAgentStore } from '../machines/createAgentStore';
import { createAgUIAgentProvider } from '../providers/agui/createAgUIAgentProvider';
import { createOpenAICompatibleAgentProvider } from '../providers/openai/createOpenAICompatibleAgentProvider';
import { runAgentProvider } from '../providers/runAgentProvider';
import { createSSETransport } from '../transports/createSSETransport';
import { checkpointedRun } from './checkpointedRun';
import { responseOf } from './workload';

/** The floor: split the SSE text into frames and JSON.parse each data line. */
export function floor(text: string): number {
  let parsed = 0;
  let start = 0;
  while (start < text.length) {
    const end = text.indexOf('\n\n', start);
    const frame = text.slice(start, end === -1 ? text.length : end);
    start = end === -1 ? text.length : end + 2;
    if (frame.startsWith('data: ')) {
      const data = frame.slice(6);
      if (data !== '[DONE]') {
        JSON.parse(data);
        parsed += 1;
      }
    }
  }
  return parsed;
}

export type ReadMode = 'end' | 'per-read';

export interface AgentstateOptions {
  /** A checkpoint coordinator subscribed as the runtime subscribes it, saving to memory storage. */
  checkpoint?: boolean;
}

/**
 * agent-machines: bytes -> SSE transport -> provider -> validated events -> store -> AgentState;
 * with `checkpoint`, the store saved by a coordinator as the runtime saves it (bench/checkpointedRun.ts).
 */
export async function agentMachines(
  format: 'agui' | 'openai',
  bytes: Uint8Array,
  mode: ReadMode,
  options: AgentstateOptions = {},
): Promise<number> {
  const store = createAgentStore();
  let events = 0;
  // One 16 KiB read stands for one 16 ms frame of a real stream: the UI reads the state once per frame.
  const fetch = async () => responseOf(bytes, mode === 'per-read' ? () => void store.getSnapshot() : undefined);
  const transport = createSSETransport<never>({ url: 'http://bench.invalid', fetch: fetch as typeof globalThis.fetch });
  const provider =
    format === 'agui'
      ? createAgUIAgentProvider({ transport })
      : createOpenAICompatibleAgentProvider({ baseURL: 'http://bench.invalid', model: 'bench', transport });
  const input = format === 'agui' ? { messages: [] } : { messages: [] };
  const checkpoints =
    options.checkpoint === true
      ? checkpointedRun({ store, sessionId: 'bench', runId: 'run', provider: provider as never, input })
      : undefined;
  await runAgentProvider({
    provider: provider as never,
    input: input as never,
    sessionId: 'bench',
    runId: 'run',
    // As `onEvent: store.dispatch` does: the runner's admission token goes to the store.
    onEvent: (event, admission) => {
      events += 1;
      store.dispatch(event, admission);
    },
    ...(checkpoints === undefined ? {} : { onCursor: checkpoints.onCursor }),
  });
  if (checkpoints !== undefined && (await checkpoints.finish()).saves < 2)
    throw new Error(`agent-machines ${format}: the run was not saved`);
  const state = store.getSnapshot();
  if (Object.keys(state.toolCalls).length !== 20 || state.issues.length > 0)
    throw new Error(`agent-machines ${format}: wrong state`);
  store.destroy();
  return events;
}

/** @ag-ui/client's own pipeline: its SSE parsing, verify, chunk transform and apply, through HttpAgent. */
export async function agUIClient(bytes: Uint8Array): Promise<number> {
  const agent = new HttpAgent({ url: 'http://bench.invalid', fetch: (async () => responseOf(bytes)) as typeof fetch });
  let events = 0;
  await agent.runAgent(
    { runId: 'run' },
    {
      onEvent: () => {
        events += 1;
      },
    },
  );
  if (agent.messages.length < 2) throw new Error('@ag-ui/client: wrong messages');
  return events;
}

/** The AI SDK's client path: its JSON event stream parsing (validated chunks) into readUIMessageStream. */
export async function aiSdk(bytes: Uint8Array): Promise<number> {
  const chunks = parseJsonEventStream({
    stream: responseOf(bytes).body as ReadableStream<Uint8Array>,
    schema: uiMessageChunkSchema,
  });
  const uiChunks = chunks.pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) throw result.error;
        controller.enqueue(result.value);
      },
    }),
  );
  let updates = 0;
  let last: { parts: unknown[] } | undefined;
  for await (const message of readUIMessageStream({ stream: uiChunks })) {
    updates += 1;
    last = message;
  }
  if (last === undefined || last.parts.length < 20) throw new Error('ai: wrong message');
  return updates;
}

export type WireFormat = 'agui' | 'openai' | 'ui';

/** One pipeline of the comparison: its id (for bench/memory.ts), its name in the tables, the bytes it reads. */
export interface PipelineSpec {
  id: string;
  name: string;
  format: WireFormat;
  run: (input: { text: string; bytes: Uint8Array }) => unknown;
}

/** The pipelines measured side by side, round-robin, at every size. */
export const PIPELINES: readonly PipelineSpec[] = [
  {
    id: 'floor:agui',
    name: 'floor: SSE split + JSON.parse (AG-UI bytes)',
    format: 'agui',
    run: ({ text }) => floor(text),
  },
  {
    id: 'agent-machines:agui:end',
    name: 'agent-machines, AG-UI, read at end',
    format: 'agui',
    run: ({ bytes }) => agentMachines('agui', bytes, 'end'),
  },
  {
    id: 'agent-machines:agui:per-read',
    name: 'agent-machines, AG-UI, read per 16 KiB frame',
    format: 'agui',
    run: ({ bytes }) => agentMachines('agui', bytes, 'per-read'),
  },
  {
    id: 'floor:openai',
    name: 'floor: SSE split + JSON.parse (OpenAI bytes)',
    format: 'openai',
    run: ({ text }) => floor(text),
  },
  {
    id: 'agent-machines:openai:end',
    name: 'agent-machines, OpenAI-compatible, read at end',
    format: 'openai',
    run: ({ bytes }) => agentMachines('openai', bytes, 'end'),
  },
  {
    id: 'agent-machines:openai:per-read',
    name: 'agent-machines, OpenAI-compatible, read per 16 KiB frame',
    format: 'openai',
    run: ({ bytes }) => agentMachines('openai', bytes, 'per-read'),
  },
  {
    id: 'floor:ui',
    name: 'floor: SSE split + JSON.parse (AI SDK bytes)',
    format: 'ui',
    run: ({ text }) => floor(text),
  },
  {
    id: 'ai',
    name: 'ai readUIMessageStream (with its chunk parsing)',
    format: 'ui',
    run: ({ bytes }) => aiSdk(bytes),
  },
];

/** @ag-ui/client, measured apart from the others because it is quadratic. */
export const AGUI_CLIENT_PIPELINE: PipelineSpec = {
  id: 'agui-client',
  name: '@ag-ui/client HttpAgent (verify, chunks, apply)',
  format: 'agui',
  run: ({ bytes }) => agUIClient(bytes),
};
