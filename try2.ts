import { agentstate, floor } from './bench/pipelines';
import { createWorkload, encodeAgUI, encodeOpenAI } from './bench/workload';
const w = createWorkload(100_000);
const agui = encodeAgUI(w); const openai = encodeOpenAI(w);
const enc = new TextEncoder(); const a = enc.encode(agui); const o = enc.encode(openai);
for (let i = 0; i < 4; i++) {
  let t = performance.now(); floor(agui); const f = performance.now() - t;
  t = performance.now(); await agentstate('agui', a, 'end'); const x = performance.now() - t;
  t = performance.now(); await agentstate('openai', o, 'end'); const y = performance.now() - t;
  console.log(`floor ${f.toFixed(1)} agui ${x.toFixed(1)} (${(x / f).toFixed(2)}x) openai ${y.toFixed(1)} (${(y / f).toFixed(2)}x)`);
}
