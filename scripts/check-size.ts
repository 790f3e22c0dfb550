// Bundles each browser entry as an application would (esbuild, minified, for the
// browser, dependencies included) and fails when its gzip size is over budget.
import { bundleSize } from './bundleSize';

// The target is 25 KB; the dependencies alone (xstate 12.5, zod/mini 8.7,
// fast-json-patch's core 2.8 KB) come to 23.4 KB, so these guard against growth while that
// is open. The second is what a React app takes in: the core and the hook, React left out.
// The hostile-input checks (plain JSON with a depth limit, patch limits, clean restores),
// runs that wait for input, activities and extensions raised the core by 3.4 KB; the
// entity-kind table, the store's parts and the schema-guided restore copy by 0.7 KB more.
// The interaction runtime under the hook (commands and their runner, command lanes, command
// states, the agent loop with continuations) added 4.8 KB to the React entry; continuations
// and retries in the store (continuesRunId, retriedBy) 0.3 KB to the core; restoring from a
// checkpoint, the save coordinator, the connection machine and reconnect with backoff 6 KB more
// to the React entry; the hook on @xstate/react (1.5 KB with its use-sync-external-store shim),
// its message layer, render batching and selector hooks 2 KB more; the grouped thread list
// (XChatMessageList, useXChatMessageGroups) and keyed message notifications 0.3 KB more; the
// runtime as one actor (its machine invoking the connection, spawning the lanes and routing their commands) 0.7 KB more.
const budgets = [
  { contents: "export * from './dist/index.js';", name: 'agentstate', limitKb: 43.5 },
  {
    contents: "export * from './dist/index.js'; export * from './dist/react.js';",
    name: 'agentstate + agentstate/react',
    limitKb: 62,
  },
];

let failed = false;
for (const { contents, name, limitKb } of budgets) {
  const { minifiedKb, gzipKb } = await bundleSize(contents, ['react', 'react-dom']);
  const ok = gzipKb <= limitKb;
  failed ||= !ok;
  console.log(
    `${ok ? 'ok  ' : 'FAIL'} ${name}: ${gzipKb.toFixed(1)} KB min+gzip (budget ${limitKb} KB, ${minifiedKb.toFixed(0)} KB minified)`,
  );
}
if (failed) process.exit(1);
