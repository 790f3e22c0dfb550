import { createAgentStore } from './machines/createAgentStore';
import { createAgUIAgentProvider } from './providers/agui/createAgUIAgentProvider';
import { readAgUIChunk } from './providers/agui/parseAgUIEvent';
import { runAgentProvider } from './providers/runAgentProvider';
import { createSSETransport } from './transports/createSSETransport';
import { createWorkload, encodeAgUI, responseOf } from './bench/workload';
import { checkAgentEvent } from './protocol/parseAgentEvent';
const w = createWorkload(100_000);
const bytes = new TextEncoder().encode(encodeAgUI(w));
const transport = createSSETransport<never>({ url: 'http://x', fetch: (async () => responseOf(bytes)) as never });
async function stage(name: string, fn: () => Promise<void>) { const times = []; for (let i = 0; i < 5; i++) { const t = performance.now(); await fn(); times.push(performance.now() - t); } times.sort((a, b) => a - b); console.log(name.padEnd(30), times[2]!.toFixed(1)); }
await stage('A transport', async () => { for await (const c of transport.open(undefined as never, new AbortController().signal)) void c; });
await stage('B + parse/validate', async () => { for await (const c of transport.open(undefined as never, new AbortController().signal)) readAgUIChunk(c); });
const provider = createAgUIAgentProvider({ transport });
await stage('C + mapping', async () => { const ctx = provider.createContext({ sessionId: 's', runId: 'r', initialSequence: 0, now: Date.now, signal: new AbortController().signal }); provider.start({ messages: [] }, ctx); for await (const c of transport.open(undefined as never, new AbortController().signal)) provider.transformChunk(c, ctx); });
await stage('C2 + checkAgentEvent', async () => { const ctx = provider.createContext({ sessionId: 's', runId: 'r', initialSequence: 0, now: Date.now, signal: new AbortController().signal }); provider.start({ messages: [] }, ctx); for await (const c of transport.open(undefined as never, new AbortController().signal)) for (const e of provider.transformChunk(c, ctx)) checkAgentEvent(e); });
await stage('D + runner (no store)', async () => { await runAgentProvider({ provider, input: { messages: [] }, sessionId: 's', runId: 'r', onEvent: () => {} }); });
await stage('E + store', async () => { const store = createAgentStore(); await runAgentProvider({ provider, input: { messages: [] }, sessionId: 's', runId: 'r', onEvent: store.dispatch }); store.getSnapshot(); store.destroy(); });
