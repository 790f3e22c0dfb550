// The package as a consumer installs it: the built dist/ (`npm run build`, which `npm test` runs
// first) copied into node_modules/agent-machines of a scratch directory that has the runtime
// dependencies and nothing else (no vitest), and loaded by plain Node processes through the
// exports map, as ES modules and as CommonJS.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentCommandFactory } from '../protocol/createAgentCommandFactory';
import { bundleSize } from '../scripts/bundleSize';
import { postJson, type ReadFrame, readEvents } from './support/hostClient';
import { startModelServer } from './support/modelServer';

const repository = resolve(import.meta.dirname, '..');
const packageJson = JSON.parse(readFileSync(join(repository, 'package.json'), 'utf8')) as {
  name: string;
  license: string;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  exports: Record<string, string | { import: { default: string }; require: { default: string } }>;
};
let root = '';
let packageDir = '';

/** Runs a script in a fresh Node process from the scratch directory and returns what it printed, parsed. */
function runNode(fileName: string, source: string): unknown {
  const file = join(root, fileName);
  writeFileSync(file, source);
  const { NODE_OPTIONS: _options, NODE_PATH: _path, ...env } = process.env;
  return JSON.parse(execFileSync(process.execPath, [file], { cwd: root, env, encoding: 'utf8' }));
}

beforeAll(() => {
  const dist = join(repository, 'dist');
  if (!existsSync(join(dist, 'index.js'))) throw new Error('No dist/index.js: run `npm run build` first');
  root = mkdtempSync(join(tmpdir(), 'agent-machines-packaging-'));
  packageDir = join(root, 'node_modules', packageJson.name);
  mkdirSync(join(packageDir, 'dist'), { recursive: true });
  for (const file of readdirSync(dist).filter((file) => /\.c?js$/.test(file)))
    cpSync(join(dist, file), join(packageDir, 'dist', file));
  for (const file of ['package.json', 'LICENSE', 'README.md']) cpSync(join(repository, file), join(packageDir, file));
  for (const dependency of Object.keys(packageJson.dependencies)) {
    mkdirSync(dirname(join(root, 'node_modules', dependency)), { recursive: true });
    symlinkSync(join(repository, 'node_modules', dependency), join(root, 'node_modules', dependency), 'dir');
  }
});

afterAll(() => {
  if (root !== '') rmSync(root, { recursive: true, force: true });
});

// Shared by the scripts below: one run's events, valid, and the same without its terminal.
const validatorCall = (agentMachines: string, providers: string) => `
  const events = ${agentMachines}.createAgentEventFactory({ sessionId: 's', runId: 'r' });
  const run = [
    events.create('run.started', {}),
    events.create('tool.requested', { toolCallId: 't', name: 'search' }),
    events.create('tool.arguments_delta', { toolCallId: 't', delta: '{}' }),
    events.create('tool.running', { toolCallId: 't' }),
    events.create('tool.completed', { toolCallId: 't', result: 1 }),
    events.create('run.completed', {}),
  ];
  const capabilities = { eventTypes: ${agentMachines}.AGENT_EVENT_TYPES, transports: ['sse'] };
  const codes = (list) => ${providers}.validateAgentProviderEvents(capabilities, list).map((issue) => issue.code);
  const result = { valid: codes(run), unfinished: codes(run.slice(0, -1)) };
`;

describe('packaging: agent-machines/providers has the validator, without vitest', () => {
  it('validates a run from the CommonJS build, where agent-machines/testing needs vitest', () => {
    const output = runNode(
      'validator.cjs',
      `const agentMachines = require('agent-machines');
      const providers = require('agent-machines/providers');
      ${validatorCall('agentMachines', 'providers')}
      try { require('agent-machines/testing'); result.testing = 'loaded'; } catch (error) { result.testing = error.message.split('\\n')[0]; }
      console.log(JSON.stringify(result));`,
    );
    expect(output).toEqual({
      valid: [],
      unfinished: ['missing_run_terminal'],
      testing: "Cannot find module 'vitest'",
    });
  });

  it('validates a run from the ES module build, where agent-machines/testing needs vitest', () => {
    const output = runNode(
      'validator.mjs',
      `import * as agentMachines from 'agent-machines';
      import * as providers from 'agent-machines/providers';
      ${validatorCall('agentMachines', 'providers')}
      try { await import('agent-machines/testing'); result.testing = 'loaded'; } catch (error) { result.testing = error.code; }
      console.log(JSON.stringify(result));`,
    );
    expect(output).toEqual({ valid: [], unfinished: ['missing_run_terminal'], testing: 'ERR_MODULE_NOT_FOUND' });
  });
});

describe('packaging: agent-machines/server', () => {
  const script = `
    const host = server.createAgentHost({
      providers: { local: providers.createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hi ', 'there'] }] } }) },
    });
    const started = await host.startRun('packed', { provider: 'local', input: { prompt: 'Hello' } });
    for (let tries = 0; tries < 200 && (await host.getState('packed')).state.runs[started.runId]?.status !== 'completed'; tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const { state, cursor } = await host.getState('packed');
    const answer = await host.fetch(new Request('http://host/sessions/packed/state', { method: 'DELETE' }));
    const result = {
      status: state.runs[started.runId].status,
      cursor,
      refused: [answer.status, (await answer.json()).error.code],
    };
    await host.close();
    let redis;
    try { redis = typeof (await loadRedis()).createRedisEventLog; } catch (error) { redis = error.code; }
    console.log(JSON.stringify({ ...result, redis }));`;

  it('runs a host from the ES module build, and agent-machines/server/redis needs the redis peer', () => {
    const output = runNode(
      'server.mjs',
      `import * as server from 'agent-machines/server';
      import * as providers from 'agent-machines/providers';
      const loadRedis = () => import('agent-machines/server/redis');
      ${script}`,
    );
    expect(output).toEqual({
      status: 'completed',
      cursor: '8',
      refused: [405, 'method_not_allowed'],
      redis: 'ERR_MODULE_NOT_FOUND',
    });
  });

  it('runs a host from the CommonJS build', () => {
    const output = runNode(
      'server.cjs',
      `const server = require('agent-machines/server');
      const providers = require('agent-machines/providers');
      const loadRedis = async () => require('agent-machines/server/redis');
      (async () => { ${script} })();`,
    );
    expect(output).toEqual({
      status: 'completed',
      cursor: '8',
      refused: [405, 'method_not_allowed'],
      redis: 'MODULE_NOT_FOUND',
    });
  });
});

describe('packaging: agent-machines/runtime works without React installed', () => {
  const script = (load: string) => `
    ${load}
    const provider = providers.createLocalAgentProvider({
      script: { steps: [{ type: 'tool', name: 'search', argumentDeltas: ['{}'], error: { message: 'down', retryable: true } }, { type: 'await_command', timeoutMs: 2000 }, { type: 'text', deltas: ['Done'] }] },
    });
    const chat = runtime.createXChatRuntime({ provider, sessionId: 'packed' });
    const running = chat.request({ prompt: 'Hi' });
    const result = {};
    setTimeout(async () => {
      const runId = Object.keys(chat.getSnapshot().agentState.runs)[0];
      try { require('react'); result.react = 'installed'; } catch (error) { result.react = error.code; }
      await chat.agentActions.retryTool({ runId, toolCallId: 'tool-0' });
      result.run = (await running).status;
      result.attempts = Object.values(chat.getSnapshot().agentState.toolCalls).map((call) => [call.attempt, call.status]);
      result.commandError = typeof runtime.AgentCommandError;
      console.log(JSON.stringify(result));
    }, 50);`;
  const expected = {
    react: 'MODULE_NOT_FOUND',
    run: 'completed',
    attempts: [
      [1, 'failed'],
      [2, 'failed'],
    ],
    commandError: 'function',
  };

  it('runs the agent loop from the CommonJS build', () => {
    const output = runNode(
      'runtime.cjs',
      script(
        `const runtime = require('agent-machines/runtime'); const providers = require('agent-machines/providers');`,
      ),
    );
    expect(output).toEqual(expected);
  });

  it('runs the agent loop from the ES module build', () => {
    const output = runNode(
      'runtime.mjs',
      script(`import * as runtime from 'agent-machines/runtime'; import * as providers from 'agent-machines/providers';
      import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);`),
    );
    expect(output).toEqual(expected);
  });
});

describe('packaging: agent-machines/checkpoint and agent-machines/checkpoint/node', () => {
  const script = (load: string) => `
    ${load}
    const { mkdtempSync, readdirSync } = require('node:fs');
    const { join } = require('node:path');
    const { tmpdir } = require('node:os');
    const agentMachines = require('agent-machines');
    (async () => {
      const store = agentMachines.createAgentStore();
      const events = agentMachines.createAgentEventFactory({ sessionId: 's1', runId: 'r1' });
      store.batch([events.create('run.started', {}), events.create('message.started', { messageId: 'm', role: 'user', content: 'Hi' })]);
      const saved = { schemaVersion: 1, eventProtocolVersion: '0.1', commandProtocolVersion: '0.1', sessionId: 's1',
        state: store.getSnapshot(), inputByRun: { r1: { prompt: 'Hi' } }, cursorByRun: { r1: '7' }, pendingCommands: [], savedAt: 1 };
      const directory = mkdtempSync(join(tmpdir(), 'agent-machines-checkpoint-'));
      const storage = node.createFileAgentCheckpointStorage(directory);
      await storage.save(saved);
      const loaded = await checkpoint.loadAgentCheckpoint(storage, 's1');
      const restored = agentMachines.createAgentStore();
      restored.reset(loaded.state);
      let invalid;
      try { checkpoint.parseAgentCheckpoint({ ...saved, schemaVersion: 9 }); } catch (error) { invalid = [error.code, error instanceof agentMachines.AgentError]; }
      console.log(JSON.stringify({
        same: require('node:util').isDeepStrictEqual(restored.getSnapshot(), store.getSnapshot()),
        cursor: loaded.cursorByRun.r1,
        files: readdirSync(directory).length,
        invalid,
      }));
      require('node:fs').rmSync(directory, { recursive: true, force: true });
    })();`;
  const expected = { same: true, cursor: '7', files: 1, invalid: ['unsupported_version', true] };

  it('saves to a file and restores from the CommonJS build', () => {
    const output = runNode(
      'checkpoint.cjs',
      script(
        `const checkpoint = require('agent-machines/checkpoint'); const node = require('agent-machines/checkpoint/node');`,
      ),
    );
    expect(output).toEqual(expected);
  });

  it('saves to a file and restores from the ES module build', () => {
    const output = runNode(
      'checkpoint.mjs',
      script(`import * as checkpoint from 'agent-machines/checkpoint'; import * as node from 'agent-machines/checkpoint/node';
      import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);`),
    );
    expect(output).toEqual({ ...expected, invalid: ['unsupported_version', false] });
  });
});

// Every error class, by the entry that exports it, with arguments for its constructor.
const errorClasses = `
  const entries = ['agent-machines', 'agent-machines/providers', 'agent-machines/transports', 'agent-machines/providers/openai',
    'agent-machines/providers/anthropic', 'agent-machines/providers/agui', 'agent-machines/providers/ai-sdk',
    'agent-machines/runtime', 'agent-machines/checkpoint', 'agent-machines/providers/agent-event', 'agent-machines/server'];
  const argumentsByClass = {
    AgentError: ['code', 'message'],
    AgentValidationError: ['state', { path: 'runs', reason: 'r', message: 'm' }],
    AgentProtocolError: [{ code: 'invalid_event', message: 'm' }],
    AgentProviderError: ['invalid_event', 'p', 'reason'],
    AgentCommandError: ['invalid_command', 'message'],
    AgentCheckpointError: ['invalid_checkpoint', 'message'],
    AgentTransportError: ['aborted', 'message'],
    LocalAgentRuntimeError: ['message', 'code'],
    OpenAIStreamError: ['message', 'code', 'type'],
    AnthropicStreamError: ['overloaded_error', 'message'],
    AgUIEventError: ['RUN_STARTED', 'threadId', 'reason', {}],
    AISDKChunkError: ['text-delta', 'id', 'reason', '{}'],
    AgentHostError: ['forbidden', 'message'],
    AgentEventLogError: ['closed', 'message'],
  };
  function classesOf(load) {
    const classes = [];
    for (const entry of entries) {
      for (const [name, value] of Object.entries(load(entry))) {
        if (typeof value !== 'function' || !(value.prototype instanceof Error)) continue;
        const instance = new value(...(argumentsByClass[name] ?? ['a', 'b', 'c', 'd']));
        classes.push({ entry, name, errorClass: value, instance });
      }
    }
    return classes;
  }
`;

const sameCopyCheck = `
  const AgentError = classes.find((found) => found.entry === 'agent-machines' && found.name === 'AgentError').errorClass;
  const result = {};
  for (const { entry, name, errorClass, instance } of classes) {
    result[entry + ' ' + name] = {
      instanceOfAgentError: instance instanceof AgentError,
      extendsAgentError: name === 'AgentError' || Object.getPrototypeOf(errorClass) === AgentError,
      className: errorClass.name,
      errorName: instance.name,
    };
  }
`;

const knownClasses = [
  'agent-machines AgentError',
  'agent-machines AgentValidationError',
  'agent-machines AgentProtocolError',
  'agent-machines/providers AgentProviderError',
  'agent-machines/providers LocalAgentRuntimeError',
  'agent-machines/transports AgentTransportError',
  'agent-machines/providers/openai OpenAIStreamError',
  'agent-machines/providers/anthropic AnthropicStreamError',
  'agent-machines/providers/agui AgUIEventError',
  'agent-machines/providers/ai-sdk AISDKChunkError',
  'agent-machines/server AgentHostError',
  'agent-machines/server AgentEventLogError',
];

type ClassReport = Record<
  string,
  { instanceOfAgentError: boolean; extendsAgentError: boolean; className: string; errorName: string }
>;

function expectOneCopy(report: ClassReport) {
  expect(Object.keys(report)).toEqual(expect.arrayContaining(knownClasses));
  for (const [key, found] of Object.entries(report)) {
    const name = key.split(' ')[1];
    expect({ key, ...found }).toEqual({
      key,
      instanceOfAgentError: true,
      extendsAgentError: true,
      className: name,
      errorName: name,
    });
  }
}

describe('packaging: one copy of each class across entries', () => {
  it('CommonJS: every error class of every entry extends the AgentError of agent-machines', () => {
    const report = runNode(
      'classes.cjs',
      `${errorClasses}
      const classes = classesOf((entry) => require(entry));
      ${sameCopyCheck}
      console.log(JSON.stringify(result));`,
    ) as ClassReport;
    expectOneCopy(report);
  });

  it('ES modules: every error class of every entry extends the AgentError of agent-machines', () => {
    const report = runNode(
      'classes.mjs',
      `${errorClasses}
      const modules = {};
      for (const entry of entries) modules[entry] = await import(entry);
      const classes = classesOf((entry) => modules[entry]);
      ${sameCopyCheck}
      console.log(JSON.stringify(result));`,
    ) as ClassReport;
    expectOneCopy(report);
  });

  it('an AgentProviderError thrown by runAgentProvider is instanceof AgentError, in both formats', () => {
    const throwing = (load: string) => `
      const { AgentError } = ${load}('agent-machines');
      const { runAgentProvider, createLocalAgentProvider } = ${load}('agent-machines/providers');
      const local = createLocalAgentProvider({ script: { steps: [] } });
      const provider = { ...local, protocol: { name: 'other', version: '1' } };
      const error = await runAgentProvider({ provider, input: { prompt: 'x' }, sessionId: 's', onEvent() {} }).catch((caught) => caught);
      console.log(JSON.stringify({ name: error.name, code: error.code, instanceOfAgentError: error instanceof AgentError }));`;
    const expected = { name: 'AgentProviderError', code: 'unsupported_protocol', instanceOfAgentError: true };
    expect(runNode('throw.cjs', `(async () => { ${throwing('require')} })();`)).toEqual(expected);
    expect(runNode('throw.mjs', `const load = (entry) => import(entry); ${throwing('await load')}`)).toEqual(expected);
  });
});

describe('packaging: isInstance answers for its class and subclasses, across copies', () => {
  it('matches the class hierarchy for every pair of classes, ESM against CJS too', () => {
    const report = runNode(
      'isInstance.mjs',
      `import { createRequire } from 'node:module';
      const require = createRequire(import.meta.url);
      ${errorClasses}
      const modules = {};
      for (const entry of entries) modules[entry] = await import(entry);
      const classes = [
        ...classesOf((entry) => modules[entry]).map((found) => ({ ...found, format: 'esm' })),
        ...classesOf((entry) => require(entry)).map((found) => ({ ...found, format: 'cjs' })),
      ];
      const wrong = [];
      for (const checker of classes) {
        for (const value of classes) {
          // Every class extends AgentError directly (the test above checks it).
          const expected = checker.name === 'AgentError' || checker.name === value.name;
          if (checker.errorClass.isInstance(value.instance) !== expected)
            wrong.push(checker.format + ' ' + checker.name + '.isInstance(' + value.format + ' ' + value.name + ')');
        }
      }
      const esm = (name) => classes.find((found) => found.format === 'esm' && found.name === name);
      const cjs = (name) => classes.find((found) => found.format === 'cjs' && found.name === name);
      console.log(JSON.stringify({
        pairs: classes.length ** 2,
        wrong,
        openAIOfTransport: esm('OpenAIStreamError').errorClass.isInstance(esm('AgentTransportError').instance),
        transportAcrossCopies: cjs('AgentTransportError').errorClass.isInstance(esm('AgentTransportError').instance),
        instanceofAcrossCopies: esm('AgentTransportError').instance instanceof cjs('AgentTransportError').errorClass,
        errorOfLocalAcrossCopies: cjs('AgentError').errorClass.isInstance(esm('LocalAgentRuntimeError').instance),
        plainError: esm('AgentError').errorClass.isInstance(Object.assign(new Error('x'), { name: 'AgentError' })),
      }));`,
    ) as { pairs: number; wrong: string[] };
    expect(report.pairs).toBeGreaterThanOrEqual((knownClasses.length * 2) ** 2);
    expect(report).toMatchObject({
      wrong: [],
      openAIOfTransport: false,
      transportAcrossCopies: true,
      instanceofAcrossCopies: false,
      errorOfLocalAcrossCopies: true,
      plainError: false,
    });
  });
});

describe('packaging: what ships', () => {
  it('ships LICENSE (MIT, as package.json says), and every file the exports map and its chunks name', () => {
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: packageDir, encoding: 'utf8' }),
    ) as [{ files: { path: string }[] }];
    const files = packed[0].files.map((file) => file.path);
    const targets = Object.values(packageJson.exports).flatMap((target) =>
      typeof target === 'string' ? [target] : [target.import.default, target.require.default],
    );
    const chunks = readdirChunks(files);
    expect(files).toEqual(expect.arrayContaining(['LICENSE', ...targets.map((target) => target.slice(2))]));
    expect(chunks.missing).toEqual([]);
    expect(chunks.count).toBeGreaterThan(0);
    expect(packageJson.license).toBe('MIT');
    const license = readFileSync(join(repository, 'LICENSE'), 'utf8');
    expect(license.split('\n')[0]).toBe('MIT License');
    expect(license).toContain('Copyright (c) 2026 agent-machines contributors');
  });

  it('the size check bundles an entry with the chunks it imports', async () => {
    const entry = join(packageDir, 'dist', 'index.js');
    const { inputs } = await bundleSize(`export * from ${JSON.stringify(entry)};`);
    const bundled = inputs.map((input) => resolve(input));
    const chunks = [...importedChunks(join(packageDir, 'dist'), 'index.js')];
    expect(chunks.length).toBeGreaterThan(0);
    expect(bundled).toEqual(expect.arrayContaining([entry, ...chunks]));
    expect(bundled.some((input) => input.includes(`${join('node_modules', 'xstate')}`))).toBe(true);
  });
});

/** The chunks a built file imports, directly or through other chunks. */
function importedChunks(directory: string, file: string, found = new Set<string>()): Set<string> {
  const source = readFileSync(join(directory, file), 'utf8');
  for (const match of source.matchAll(/(?:from |import |require\()["']\.\/([^"']+)["']/g)) {
    const chunk = join(directory, match[1] as string);
    if (found.has(chunk)) continue;
    found.add(chunk);
    importedChunks(directory, match[1] as string, found);
  }
  return found;
}

/** The chunks the packed entries import, and those of them the tarball lacks. */
function readdirChunks(files: readonly string[]): { count: number; missing: string[] } {
  const imported = new Set<string>();
  for (const file of files.filter((path) => /^dist\/[^/]+\.c?js$/.test(path))) {
    for (const chunk of importedChunks(join(packageDir, 'dist'), file.slice('dist/'.length)))
      imported.add(`dist/${chunk.slice(join(packageDir, 'dist').length + 1)}`);
  }
  return { count: imported.size, missing: [...imported].filter((path) => !files.includes(path)) };
}

// A server-only project installs the package and its dependencies, and none of the optional
// peers: React and @xstate/react are for `/react`, redis for `/server/redis`.
describe('packaging: a project without React, @xstate/react or redis', () => {
  const name = packageJson.name;

  it('has React, @xstate/react and redis as optional peers, not as dependencies', () => {
    const peers = ['react', '@xstate/react', 'redis'];
    expect(peers.filter((peer) => peer in packageJson.dependencies)).toEqual([]);
    expect(peers.map((peer) => [peer, packageJson.peerDependenciesMeta[peer]?.optional === true])).toEqual(
      peers.map((peer) => [peer, true]),
    );
    expect(Object.keys(packageJson.peerDependencies)).toEqual(expect.arrayContaining(peers));
  });

  it('only the react entry reaches @xstate/react or react, and only the server/redis entry reaches redis', () => {
    const dist = join(packageDir, 'dist');
    const reached: Record<string, string[]> = {};
    for (const target of Object.values(packageJson.exports)) {
      if (typeof target === 'string') continue;
      for (const file of [target.import.default, target.require.default].map((path) => path.slice('./dist/'.length))) {
        const sources = [join(dist, file), ...importedChunks(dist, file)].map((path) => readFileSync(path, 'utf8'));
        reached[file] = ['@xstate/react', 'react', 'redis'].filter((peer) =>
          sources.some((source) => new RegExp(`(?:from |import\\(|require\\()["']${peer}["']`).test(source)),
        );
      }
    }
    expect(reached).toMatchObject({
      'react.js': ['@xstate/react', 'react'],
      'react.cjs': ['@xstate/react', 'react'],
      'server-redis.js': ['redis'],
      'server-redis.cjs': ['redis'],
    });
    const others = Object.entries(reached).filter(([file]) => !/^(react|server-redis)\.c?js$/.test(file));
    expect(others.length).toBeGreaterThanOrEqual(24);
    expect(others.filter(([, peers]) => peers.length > 0)).toEqual([]);
  });

  const entries = ['', '/providers', '/providers/openai', '/runtime', '/checkpoint', '/checkpoint/node', '/server'];
  const expected = {
    missing: { react: true, '@xstate/react': true, redis: true },
    loaded: Object.fromEntries(entries.map((entry) => [`${name}${entry}`, true])),
  };
  const missing = `
    const missing = {};
    for (const peer of ['react', '@xstate/react', 'redis']) {
      try { require.resolve(peer); missing[peer] = false; } catch (error) { missing[peer] = error.code === 'MODULE_NOT_FOUND'; }
    }`;

  it('imports the server, providers, runtime and checkpoint entries as ES modules', () => {
    const output = runNode(
      'withoutPeers.mjs',
      `import { createRequire } from 'node:module';
      const require = createRequire(import.meta.url);
      ${missing}
      const loaded = {};
      for (const entry of ${JSON.stringify(entries.map((entry) => `${name}${entry}`))})
        loaded[entry] = Object.keys(await import(entry)).length > 0;
      console.log(JSON.stringify({ missing, loaded }));`,
    );
    expect(output).toEqual(expected);
  });

  it('requires the server, providers, runtime and checkpoint entries as CommonJS', () => {
    const output = runNode(
      'withoutPeers.cjs',
      `${missing}
      const loaded = {};
      for (const entry of ${JSON.stringify(entries.map((entry) => `${name}${entry}`))})
        loaded[entry] = Object.keys(require(entry)).length > 0;
      console.log(JSON.stringify({ missing, loaded }));`,
    );
    expect(output).toEqual(expected);
  });

  it("runs the README's complete server on the memory log, without redis installed", () => {
    const readme = readFileSync(join(repository, 'README.md'), 'utf8');
    const snippet = /A complete server:\n\n```ts\n([\s\S]*?)\n```/.exec(readme)?.[1] ?? '';
    expect(snippet).toContain(`from '${name}/server'`);
    // The README's server as it is, on a free port, with the `userOf` it leaves to the reader;
    // then two requests, and the SIGTERM handler of the snippet ends it.
    const listening = ".listen(8787, '127.0.0.1')";
    expect(snippet).toContain(listening);
    const source = `
      const users = { 'Bearer alice': { ownsSession: async (sessionId) => sessionId === 'alice-1' } };
      const userOf = async (authorization) => users[authorization ?? ''];
      ${snippet.replace(listening, ".listen(0, '127.0.0.1')")}
      server.on('listening', async () => {
        const base = 'http://127.0.0.1:' + server.address().port + '/api/agent/sessions/';
        const anonymous = await fetch(base + 'alice-1/events');
        const other = await fetch(base + 'bob-1/events', { headers: { authorization: 'Bearer alice' } });
        console.log(JSON.stringify({
          anonymous: [anonymous.status, (await anonymous.json()).error.code],
          other: [other.status, (await other.json()).error.code],
        }));
        process.kill(process.pid, 'SIGTERM');
      });`;
    const file = join(root, 'completeServer.mjs');
    writeFileSync(file, source);
    const { NODE_OPTIONS: _options, NODE_PATH: _path, REDIS_URL: _redis, ...env } = process.env;
    const output = execFileSync(process.execPath, [file], {
      cwd: root,
      env: { ...env, OPENAI_API_KEY: 'sk-not-used' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(JSON.parse(output)).toEqual({ anonymous: [403, 'forbidden'], other: [403, 'forbidden'] });
  });

  it("runs the README's agent on its server: the server tool, the approval and the client tool's result through /commands", async () => {
    const readme = readFileSync(join(repository, 'README.md'), 'utf8');
    const snippet = /A complete server:\n\n```ts\n([\s\S]*?)\n```/.exec(readme)?.[1] ?? '';
    expect(snippet.split('\n').length).toBeLessThan(40);
    // A model on loopback that looks the order up, refunds it (the approval), asks the user to pick one (the client).
    const model = await startModelServer('openai', (request) => {
      const calls = [
        { id: 'call_get', name: 'get_order', arguments: { id: 'A-1' } },
        { id: 'call_refund', name: 'refund', arguments: { id: 'A-1' } },
        { id: 'call_pick', name: 'pick_order', arguments: {} },
      ];
      const next = calls[request.toolResults.length];
      return next === undefined
        ? { text: request.toolResults.map((result) => result.content).join(' ') }
        : { toolCalls: [next] };
    });
    const source = `
      const userOf = async (authorization) =>
        authorization === 'Bearer alice' ? { ownsSession: async (sessionId) => sessionId === 'alice-1' } : undefined;
      ${snippet.replace(".listen(8787, '127.0.0.1')", ".listen(0, '127.0.0.1')")}
      server.on('listening', () => console.log(JSON.stringify({ port: server.address().port })));`;
    const file = join(root, 'agentServer.mjs');
    writeFileSync(file, source);
    const { NODE_OPTIONS: _options, NODE_PATH: _path, REDIS_URL: _redis, ...env } = process.env;
    const child = spawn(process.execPath, [file], {
      cwd: root,
      env: { ...env, OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: model.baseURL },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const [line] = (await once(createInterface({ input: child.stdout as NodeJS.ReadableStream }), 'line')) as [
        string,
      ];
      const session = `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}/api/agent/sessions/alice-1`;
      const headers = { authorization: 'Bearer alice' };
      type Event = { type: string; runId: string; payload: Record<string, unknown> };
      const eventsOf = (frames: ReadFrame[]) =>
        frames.filter((frame) => frame.event === undefined).map((frame) => JSON.parse(frame.data) as Event);
      /** The session's events, read from its start until `run` (or the run that continues `run.continues`) completed. */
      const readUntil = async (run: { id: string } | { continues: string }) => {
        const runIdOf = (events: Event[]) =>
          'id' in run
            ? run.id
            : events.find((event) => event.type === 'run.started' && event.payload.continuesRunId === run.continues)
                ?.runId;
        const { events } = await readEvents(`${session}/events`, {
          headers,
          timeoutMs: 30_000,
          stop: (frames) => {
            const all = eventsOf(frames);
            const runId = runIdOf(all);
            return all.some((event) => event.runId === runId && event.type === 'run.completed');
          },
        });
        const runId = runIdOf(events) as string;
        return { runId, events: events.filter((event) => event.runId === runId) };
      };
      const started = await postJson(
        `${session}/runs`,
        { provider: 'assistant', input: { prompt: 'Refund A-1' } },
        headers,
      );
      const first = await readUntil({ id: started.body.runId as string });
      expect(first.events.find((event) => event.type === 'tool.completed')?.payload).toEqual({
        toolCallId: 'call_get',
        result: { item: 'lamp', total: 42 },
      });
      expect(first.events.at(-1)?.payload).toMatchObject({ pendingApprovalIds: ['approval-call_refund'] });

      const approve = createAgentCommandFactory({ sessionId: 'alice-1', runId: first.runId }).create(
        'approval.resolve',
        { approvalId: 'approval-call_refund', decision: 'approved' },
      );
      expect((await postJson(`${session}/commands`, approve, headers)).status).toBe(200);
      const second = await readUntil({ continues: first.runId });
      expect(second.events.find((event) => event.type === 'tool.completed')?.payload).toEqual({
        toolCallId: 'call_refund',
        result: { refunded: true },
      });
      expect(second.events.at(-1)?.payload).toMatchObject({ pendingToolCallIds: ['call_pick'] });

      const pick = createAgentCommandFactory({ sessionId: 'alice-1', runId: second.runId }).create(
        'tool.submit_result',
        { toolCallId: 'call_pick', result: { id: 'A-1' } },
      );
      expect((await postJson(`${session}/commands`, pick, headers)).status).toBe(200);
      const third = await readUntil({ continues: second.runId });
      const text = third.events
        .filter((event) => event.type === 'message.delta')
        .map((event) => event.payload.delta)
        .join('');
      expect(text).toBe('{"item":"lamp","total":42} {"refunded":true} {"id":"A-1"}');
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await model.close();
    }
  }, 60_000);
});
