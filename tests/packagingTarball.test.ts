// The package as a user installs it before it is published: `npm pack` of this repository
// (dist/ as `npm run build` left it; `npm test` builds before vitest), then
// `npm install <tarball>` into fresh projects, as the README's Install section says. A
// server-only project gets neither React, @xstate/react, redis nor vitest, and serves a host
// over node:http; a React app also installs the peers the README names for
// agent-machines/react, typechecks a component with this repository's TypeScript and renders
// it on the server. npm resolves from its cache (`npm ci` filled it), the registry as fallback.
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const execFileAsync = promisify(execFile);
const repository = resolve(import.meta.dirname, '..');
const packageJson = JSON.parse(readFileSync(join(repository, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  exports: Record<string, unknown>;
};
const name = packageJson.name;
const readme = readFileSync(join(repository, 'README.md'), 'utf8');
const tsc = join(repository, 'node_modules', 'typescript', 'bin', 'tsc');
/** What React apps, the Redis entry and the testing entry need: a server-only project gets none of it. */
const notForServers = ['react', 'react-dom', '@xstate/react', 'redis', 'vitest'];

/** The packages README.md's Install table tells a project using `entry` to install. */
function readmeInstallFor(entry: string): string[] {
  const row = readme.split('\n').find((line) => line.startsWith(`| \`${entry}\``));
  const command = /`npm install ([^`]+)`/.exec(row ?? '')?.[1];
  if (command === undefined) throw new Error(`README.md's Install table has no \`npm install\` for ${entry}`);
  return command.split(' ');
}

/** At the version this repository tests with (its devDependencies), so the cache has it. */
function pinned(packageName: string): string {
  const version = packageJson.devDependencies[packageName];
  if (version === undefined) throw new Error(`${packageName} is not a devDependency of ${name}`);
  return `${packageName}@${version}`;
}

const reactPeers = readmeInstallFor(`${name}/react`);
// A React app renders with react-dom, and a TypeScript one has React's types.
const reactApp = [...new Set([...reactPeers, 'react', 'react-dom', '@types/react'])];

// Where npm's cache, registry, proxy and certificates are stays; the variables npm sets for the
// script running vitest (npm_config_local_prefix naming this repository, npm_package_*, ...)
// go, so nothing is installed into, or configured by, this repository.
const npmSettings =
  /^npm_config_(cache|registry|.+:registry|userconfig|globalconfig|cafile|ca|proxy|https?_proxy|no_?proxy|strict_ssl)$/i;

function cleanEnvironment(): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key === 'NODE_OPTIONS' || key === 'NODE_PATH' || key === 'INIT_CWD') continue;
    if (/^npm_/i.test(key) && !npmSettings.test(key)) continue;
    environment[key] = value;
  }
  return environment;
}

async function npm(cwd: string, args: readonly string[]): Promise<string> {
  const { stdout } = await execFileAsync('npm', args, {
    cwd,
    env: cleanEnvironment(),
    encoding: 'utf8',
    timeout: 180_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

let root = '';
let tarball = '';
let serverProject: Promise<string> = Promise.resolve('');
let reactProject: Promise<{ project: string; typecheck: string }> = Promise.resolve({ project: '', typecheck: '' });

/** A fresh project (`"type": "module"`, private) where `npm install <tarball> ...packages` ran. */
async function createProject(directory: string, packages: readonly string[]): Promise<string> {
  const project = join(root, directory);
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    `${JSON.stringify({ name: directory, version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`,
  );
  await npm(project, [
    'install',
    tarball,
    ...packages,
    '--prefer-offline',
    '--no-audit',
    '--no-fund',
    '--ignore-scripts',
  ]);
  return project;
}

/** Every package in `node_modules` of `directory`, nested ones included. */
function installedPackages(directory: string): Set<string> {
  const found = new Set<string>();
  const modules = join(directory, 'node_modules');
  if (!existsSync(modules)) return found;
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue;
    const names = entry.startsWith('@')
      ? readdirSync(join(modules, entry)).map((scoped) => `${entry}/${scoped}`)
      : [entry];
    for (const packageName of names) {
      found.add(packageName);
      for (const nested of installedPackages(join(modules, packageName))) found.add(nested);
    }
  }
  return found;
}

/** What the project's package.json lists as its dependencies. */
function dependenciesOf(project: string): Record<string, string> {
  return (JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> })
    .dependencies;
}

/** Runs a script in a fresh Node process in `project` and returns what it printed, parsed. */
async function runNode(project: string, fileName: string, source: string): Promise<unknown> {
  writeFileSync(join(project, fileName), source);
  const { stdout } = await execFileAsync(process.execPath, [fileName], {
    cwd: project,
    env: cleanEnvironment(),
    encoding: 'utf8',
    timeout: 60_000,
  });
  return JSON.parse(stdout);
}

// What a TypeScript React app writes: a chat on the local provider. Also rendered below, as
// the pinned TypeScript emits it. The `@ts-expect-error` fails the check if the package's
// types stopped reaching the component (an `any` would accept the wrong input).
const consumer = `import { createLocalAgentProvider } from '${name}/providers';
import { useXChat, type XChatConversations } from '${name}/react';

export const provider = createLocalAgentProvider({
  script: (input) => ({ steps: [{ type: 'text', deltas: ['You said ', input.prompt] }] }),
});

export function Chat({ conversations }: { conversations?: XChatConversations }) {
  const { messages, isRequesting, connectionState, onRequest } = useXChat({
    provider,
    conversationKey: 'support',
    conversations,
  });
  const send = async (prompt: string): Promise<'completed' | 'refused' | 'failed' | 'cancelled'> =>
    (await onRequest({ prompt })).status;
  // @ts-expect-error: the local provider's input is { prompt }
  const misspelled = () => onRequest({ promt: 'Hello' });
  return (
    <section data-connection={connectionState} data-requesting={String(isRequesting)}>
      <ol>
        {messages.map(({ id, message, status }) => (
          <li key={id} data-role={message.role} data-status={status}>
            {typeof message.content === 'string' ? message.content : message.content.length}
          </li>
        ))}
      </ol>
      <button type="button" disabled={isRequesting} onClick={() => void send('Hello').then(misspelled)}>
        Send
      </button>
    </section>
  );
}
`;

/** Writes consumer.tsx and checks it with `tsc` (emitting consumer.js); its errors, one a line, or ''. */
async function compileConsumer(project: string): Promise<string> {
  writeFileSync(join(project, 'consumer.tsx'), consumer);
  const compilerOptions = {
    strict: true,
    skipLibCheck: false,
    jsx: 'react-jsx',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    lib: ['es2022', 'dom'],
  };
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['consumer.tsx'] }));
  try {
    await execFileAsync(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], {
      cwd: project,
      env: cleanEnvironment(),
      encoding: 'utf8',
      timeout: 180_000,
    });
    return '';
  } catch (error) {
    return String((error as { stdout?: string }).stdout || error).trim();
  }
}

/** The files the exports map names that dist/ lacks (all of them without a build, some during one). */
function missingFromDist(): string[] {
  const targets = (value: unknown): string[] =>
    typeof value === 'string' ? [value] : Object.values(value as object).flatMap(targets);
  return [...new Set(targets(packageJson.exports))].filter((target) => !existsSync(join(repository, target)));
}

beforeAll(async () => {
  const missing = missingFromDist();
  if (missing.length > 0)
    throw new Error(
      `dist/ lacks ${missing.join(', ')}: run \`npm run build\` first (\`npm test\` runs it before vitest)`,
    );
  root = realpathSync(mkdtempSync(join(tmpdir(), `${name}-tarball-`)));
  const [packed] = JSON.parse(
    await npm(repository, ['pack', '--json', '--ignore-scripts', '--pack-destination', root]),
  ) as [{ filename: string }];
  tarball = join(root, packed.filename);
  // Both installs at once; each describe's hook waits for its own and reports its failure.
  serverProject = createProject('server-app', []);
  reactProject = createProject('react-app', reactApp.map(pinned)).then(async (project) => ({
    project,
    typecheck: await compileConsumer(project),
  }));
  serverProject.catch(() => undefined);
  reactProject.catch(() => undefined);
}, 200_000);

afterAll(async () => {
  // Whatever happened, no npm or tsc still writes into the directory being removed.
  await Promise.allSettled([serverProject, reactProject]);
  if (root !== '') rmSync(root, { recursive: true, force: true });
}, 400_000);

describe("packed tarball: the README's Install section", () => {
  it('names the file `npm pack` writes, and installs it by that name', () => {
    const section = /\n## Install\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
    expect(basename(tarball)).toBe(`${name}-${packageJson.version}.tgz`);
    expect(/npm pack\s+# writes (\S+)/.exec(section)?.[1]).toBe(basename(tarball));
    expect(/npm install \.\.\/agent-machines\/(\S+)/.exec(section)?.[1]).toBe(basename(tarball));
  });

  it('tells a React project to install react and @xstate/react itself', () => {
    expect([...reactPeers].sort()).toEqual(['@xstate/react', 'react']);
  });
});

describe('packed tarball: a server-only project', () => {
  let project = '';
  beforeAll(async () => {
    project = await serverProject;
  }, 400_000);

  it('installs the package with its dependencies, and neither React, @xstate/react, redis nor vitest', () => {
    const installed = installedPackages(project);
    expect(dependenciesOf(project)).toEqual({ [name]: `file:../${basename(tarball)}` });
    const installedJson = JSON.parse(readFileSync(join(project, 'node_modules', name, 'package.json'), 'utf8'));
    expect(installedJson.version).toBe(packageJson.version);
    expect(Object.keys(packageJson.dependencies).filter((dependency) => !installed.has(dependency))).toEqual([]);
    expect(notForServers.filter((packageName) => installed.has(packageName))).toEqual([]);
  });

  // The README's server on the memory log and the local provider, on a free port: a run posted
  // over HTTP, its events read until the stream ends after its terminal, then /state.
  const hostScript = `
    const eventLog = createMemoryEventLog();
    const host = createAgentHost({
      providers: {
        assistant: createLocalAgentProvider({
          script: (input) => ({ steps: [{ type: 'text', deltas: ['You said ', input.prompt] }] }),
        }),
      },
      eventLog,
      basePath: '/api/agent',
      authorize: async (request, { sessionId }) =>
        request.headers.get('authorization') === 'Bearer alice' && sessionId === 'alice-1',
    });
    const server = createServer(toNodeHandler(host.fetch)).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const sessions = 'http://127.0.0.1:' + server.address().port + '/api/agent/sessions/';
    const headers = { authorization: 'Bearer alice' };
    const posted = await fetch(sessions + 'alice-1/runs', {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'assistant', input: { prompt: 'Hello host' } }),
    });
    const { runId, cursor } = await posted.json();
    const after = cursor === null ? '' : '&after=' + encodeURIComponent(cursor);
    const stream = await fetch(sessions + 'alice-1/events?runId=' + encodeURIComponent(runId) + after, { headers });
    const frames = (await stream.text()).split('\\n\\n').filter((frame) => frame.includes('\\ndata: '));
    const events = frames.map((frame) => {
      const lines = frame.split('\\n');
      const event = JSON.parse(lines.find((line) => line.startsWith('data: ')).slice('data: '.length));
      return { id: lines.find((line) => line.startsWith('id: ')).slice('id: '.length), type: event.type, runId: event.runId };
    });
    const state = await (await fetch(sessions + 'alice-1/state', { headers })).json();
    const refused = await fetch(sessions + 'bob-1/state', { headers });
    const result = {
      posted: posted.status,
      stream: [stream.status, stream.headers.get('content-type')],
      ids: events.map((event) => event.id),
      types: events.map((event) => event.type),
      ofTheRun: events.every((event) => event.runId === runId),
      run: state.state.runs[runId].status,
      messages: Object.values(state.state.messages)
        .filter((message) => message.runId === runId)
        .map((message) => [message.role, message.content]),
      cursor: state.cursor,
      refused: [refused.status, (await refused.json()).error.code],
    };
    await host.close();
    await eventLog.close();
    server.close();
    server.closeAllConnections();
    try {
      await loadRedis();
      result.redis = 'loaded';
    } catch (error) {
      result.redis = { code: error.code, message: error.message.split('\\n').slice(0, 3) };
    }
    console.log(JSON.stringify(result));`;

  const served = {
    posted: 202,
    stream: [200, 'text/event-stream; charset=utf-8'],
    ids: ['1', '2', '3', '4', '5', '6', '7', '8'],
    types: [
      'run.started',
      'message.started',
      'message.completed',
      'message.started',
      'message.delta',
      'message.delta',
      'message.completed',
      'run.completed',
    ],
    ofTheRun: true,
    run: 'completed',
    messages: [
      ['user', 'Hello host'],
      ['assistant', 'You said Hello host'],
    ],
    cursor: '8',
    refused: [403, 'forbidden'],
  };

  it('serves a run over node:http from the ES module build; server/redis names the missing redis', async () => {
    const output = await runNode(
      project,
      'host.mjs',
      `import { once } from 'node:events';
      import { createServer } from 'node:http';
      import { createLocalAgentProvider } from '${name}/providers';
      import { createAgentHost, createMemoryEventLog, toNodeHandler } from '${name}/server';
      const loadRedis = () => import('${name}/server/redis');
      ${hostScript}`,
    );
    expect(output).toEqual({
      ...served,
      redis: {
        code: 'ERR_MODULE_NOT_FOUND',
        message: [
          `Cannot find package 'redis' imported from ${join(project, 'node_modules', name, 'dist')}/server-redis.js`,
        ],
      },
    });
  });

  it('serves a run over node:http from the CommonJS build; server/redis names the missing redis', async () => {
    const output = await runNode(
      project,
      'host.cjs',
      `const { once } = require('node:events');
      const { createServer } = require('node:http');
      const { createLocalAgentProvider } = require('${name}/providers');
      const { createAgentHost, createMemoryEventLog, toNodeHandler } = require('${name}/server');
      const loadRedis = async () => require('${name}/server/redis');
      (async () => { ${hostScript} })();`,
    );
    expect(output).toEqual({
      ...served,
      redis: {
        code: 'MODULE_NOT_FOUND',
        message: [
          "Cannot find module 'redis'",
          'Require stack:',
          `- ${join(project, 'node_modules', name, 'dist')}/server-redis.cjs`,
        ],
      },
    });
  });
});

describe('packed tarball: a React app', () => {
  let project = '';
  let typecheck = '';
  beforeAll(async () => {
    ({ project, typecheck } = await reactProject);
  }, 400_000);

  it("installs the package beside the README's peers, with one copy of React", () => {
    expect(dependenciesOf(project)[name]).toBe(`file:../${basename(tarball)}`);
    expect(Object.keys(dependenciesOf(project)).sort()).toEqual([name, ...reactApp].sort());
    const installed = installedPackages(project);
    expect(reactApp.filter((packageName) => !installed.has(packageName))).toEqual([]);
    expect(['redis', 'vitest'].filter((packageName) => installed.has(packageName))).toEqual([]);
    // Nothing nested under the package: it uses the app's React and @xstate/react.
    expect([...installedPackages(join(project, 'node_modules', name))]).toEqual([]);
  });

  it('typechecks a component using useXChat: strict, skipLibCheck false, jsx react-jsx, nodenext', () => {
    expect(typecheck).toBe('');
  });

  it('renders that component on the server: empty, then with a conversation completed in the request', async () => {
    const output = await runNode(
      project,
      'render.mjs',
      `import { Writable } from 'node:stream';
      import { createElement } from 'react';
      import { renderToPipeableStream, renderToString } from 'react-dom/server';
      import { createXChatConversations } from '${name}/react';
      import { Chat, provider } from './consumer.js';
      const streamed = (element) => new Promise((resolve, reject) => {
        let html = '';
        const sink = new Writable({
          write(chunk, _encoding, done) { html += chunk; done(); },
          final(done) { resolve(html); done(); },
        });
        const { pipe } = renderToPipeableStream(element, { onAllReady: () => pipe(sink), onShellError: reject, onError: reject });
      });
      const fresh = renderToString(createElement(Chat));
      // A server render's conversations are the request's own registry.
      const conversations = createXChatConversations();
      const run = await conversations.get('support', provider).request({ prompt: 'my order is 42' });
      console.log(JSON.stringify({ fresh, run: run.status, rendered: await streamed(createElement(Chat, { conversations })) }));`,
    );
    const section = (list: string) =>
      `<section data-connection="idle" data-requesting="false"><ol>${list}</ol><button type="button">Send</button></section>`;
    expect(output).toEqual({
      fresh: section(''),
      run: 'completed',
      rendered: section(
        '<li data-role="user" data-status="local">my order is 42</li>' +
          '<li data-role="assistant" data-status="success">You said my order is 42</li>',
      ),
    });
  });

  it('renders useXChat from the CommonJS build', async () => {
    const output = await runNode(
      project,
      'render.cjs',
      `const { createElement } = require('react');
      const { renderToString } = require('react-dom/server');
      const { createLocalAgentProvider } = require('${name}/providers');
      const { createXChatConversations, useXChat } = require('${name}/react');
      const provider = createLocalAgentProvider({ script: { steps: [{ type: 'text', deltas: ['Hello ', 'there'] }] } });
      function Chat({ conversations }) {
        const { messages } = useXChat({ provider, conversationKey: 'support', conversations });
        return createElement('ol', null, messages.map(({ id, message }) => createElement('li', { key: id }, message.content)));
      }
      (async () => {
        const conversations = createXChatConversations();
        const run = await conversations.get('support', provider).request({ prompt: 'Hi' });
        console.log(JSON.stringify({ run: run.status, rendered: renderToString(createElement(Chat, { conversations })) }));
      })();`,
    );
    expect(output).toEqual({ run: 'completed', rendered: '<ol><li>Hi</li><li>Hello there</li></ol>' });
  });

  it('completes a local run with createXChatRuntime from agent-machines/runtime, the one the react entry re-exports', async () => {
    const output = await runNode(
      project,
      'runtime.mjs',
      `import * as react from '${name}/react';
      import * as runtime from '${name}/runtime';
      import { provider } from './consumer.js';
      const chat = runtime.createXChatRuntime({ provider, sessionId: 'plain' });
      const run = await chat.request({ prompt: 'Hi' });
      console.log(JSON.stringify({
        run: run.status,
        messages: chat.getSnapshot().messages.map(({ message, status }) => [message.role, message.content, status]),
        sameRuntime: react.createXChatRuntime === runtime.createXChatRuntime,
      }));`,
    );
    expect(output).toEqual({
      run: 'completed',
      messages: [
        ['user', 'Hi', 'local'],
        ['assistant', 'You said Hi', 'success'],
      ],
      sameRuntime: true,
    });
  });
});
