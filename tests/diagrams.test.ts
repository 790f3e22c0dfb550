import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { and, fromPromise, not, setup } from 'xstate';
import {
  DIAGRAMS_DIRECTORY,
  MACHINE_DIAGRAM_SOURCES,
  machineDiagramFiles,
  toMermaidStateDiagram,
} from '../scripts/machineDiagrams';

const repository = join(dirname(fileURLToPath(import.meta.url)), '..');

function lines(...body: string[]): string {
  return ['stateDiagram-v2', ...body.map((line) => `  ${line}`), ''].join('\n');
}

const ID = '[A-Za-z0-9_]+';
const LABEL = '[^:;#%\\n]+';
// The statements of Mermaid's stateDiagram-v2 grammar the generator may write, one per line.
const STATEMENTS = [
  new RegExp(`^\\[\\*\\] --> ${ID}$`),
  new RegExp(`^${ID} --> \\[\\*\\]$`),
  new RegExp(`^${ID} --> ${ID} : ${LABEL}$`),
  new RegExp(`^state ${ID} \\{$`),
  new RegExp(`^state "[^"\\n]+" as ${ID}$`),
  new RegExp(`^${ID} : ${LABEL}$`),
  new RegExp(`^${ID}$`),
];

/** The problems of a diagram, checked against the documented stateDiagram-v2 syntax. */
function syntaxProblems(diagram: string): string[] {
  const problems: string[] = [];
  const [header, ...body] = diagram.trimEnd().split('\n');
  if (header !== 'stateDiagram-v2') problems.push(`header ${header}`);
  let depth = 0;
  for (const line of body) {
    const statement = line.trim();
    if (line !== `${'  '.repeat(depth + (statement === '}' ? 0 : 1))}${statement}`) problems.push(`indent: ${line}`);
    if (statement === '}') depth -= 1;
    else if (statement === '--') {
      if (depth === 0) problems.push('`--` outside a composite state');
    } else if (!STATEMENTS.some((pattern) => pattern.test(statement))) problems.push(`statement: ${statement}`);
    else if (/^(default|note\s|class\s|classDef\s|scale\s)/i.test(statement)) problems.push(`keyword: ${statement}`);
    if (statement.endsWith('{')) depth += 1;
    if (depth < 0) problems.push('unbalanced `}`');
  }
  if (depth !== 0) problems.push('unclosed `{`');
  return problems;
}

describe('docs/machines', () => {
  it('holds exactly the diagrams the machines generate', () => {
    const generated = machineDiagramFiles();
    const directory = join(repository, DIAGRAMS_DIRECTORY);
    const committed = existsSync(directory)
      ? readdirSync(directory)
          .filter((name) => name.endsWith('.md'))
          .map((name) => `${DIAGRAMS_DIRECTORY}/${name}`)
      : [];
    const differing = [...generated]
      .filter(
        ([path, text]) => !existsSync(join(repository, path)) || readFileSync(join(repository, path), 'utf8') !== text,
      )
      .map(([path]) => path);
    const stale = committed.filter((path) => !generated.has(path));
    expect(
      [...differing, ...stale],
      'the diagrams differ from the machines: run `npm run diagrams` and commit docs/machines',
    ).toEqual([]);
  });

  it('has one diagram per machine and an index linking each', () => {
    const index = machineDiagramFiles().get(`${DIAGRAMS_DIRECTORY}/README.md`);
    expect(MACHINE_DIAGRAM_SOURCES.map(({ machine }) => machine.id)).toEqual([
      'agentSession',
      'run',
      'message',
      'reasoning',
      'toolCall',
      'approval',
      'task',
      'artifact',
      'commandLane',
      'connection',
      'xChat',
    ]);
    for (const { machine, source } of MACHINE_DIAGRAM_SOURCES) {
      expect(index).toContain(`- [${machine.id}](${machine.id}.md): \`${source}\``);
      expect(existsSync(join(repository, source)), source).toBe(true);
    }
  });

  it.each(MACHINE_DIAGRAM_SOURCES.map(({ machine }) => [machine.id, machine] as const))(
    'draws %s in stateDiagram-v2 syntax',
    (_id, machine) => {
      expect(syntaxProblems(toMermaidStateDiagram(machine))).toEqual([]);
    },
  );
});

describe('toMermaidStateDiagram', () => {
  it('draws the initial state, labelled transitions and final states', () => {
    const machine = setup({ types: { events: {} as { type: 'door.open' } | { type: 'door.close' } } }).createMachine({
      id: 'door',
      initial: 'closed',
      states: {
        closed: { on: { 'door.open': { target: 'opened' } } },
        opened: { on: { 'door.close': { target: 'done' } } },
        done: { type: 'final' },
      },
    });
    expect(toMermaidStateDiagram(machine)).toBe(
      lines(
        '[*] --> closed',
        'closed',
        'opened',
        'done',
        'closed --> opened : door.open',
        'opened --> done : door.close',
        'done --> [*]',
      ),
    );
    expect(syntaxProblems(toMermaidStateDiagram(machine))).toEqual([]);
  });

  it('draws compound states as composites, with arrows in the block holding both ends', () => {
    const machine = setup({ types: { events: {} as { type: 'job.start' } | { type: 'job.pause' } } }).createMachine({
      id: 'job',
      initial: 'working',
      states: {
        working: {
          tags: ['active'],
          initial: 'idle',
          states: {
            idle: { on: { 'job.start': { target: 'busy' } } },
            busy: { on: { 'job.pause': { target: '#job.paused.idle' } } },
          },
        },
        paused: { initial: 'idle', states: { idle: {} } },
      },
    });
    expect(toMermaidStateDiagram(machine)).toBe(
      lines(
        '[*] --> working',
        'state working {',
        '  [*] --> working_idle',
        '  state "idle" as working_idle',
        '  busy',
        '  working_idle --> busy : job.start',
        '}',
        'working : tags active',
        'state paused {',
        '  [*] --> paused_idle',
        '  state "idle" as paused_idle',
        '}',
        'busy --> paused_idle : job.pause',
      ),
    );
  });

  it('names guards, combined guards and guard parameters, and draws targetless transitions as self-loops', () => {
    const machine = setup({
      types: { events: {} as { type: 'vote.cast' } },
      guards: {
        isOpen: () => true,
        hasQuorum: () => true,
        isBlocked: () => false,
        hasRole: (_args, _params: { role: string }) => true,
      },
    }).createMachine({
      id: 'ballot',
      initial: 'open',
      states: {
        open: {
          on: {
            'vote.cast': [
              { guard: and(['isOpen', not('isBlocked')]), target: 'counted' },
              { guard: { type: 'hasRole', params: { role: 'chair' } }, target: 'counted' },
              { guard: 'hasQuorum' },
              {},
            ],
          },
        },
        counted: { type: 'final' },
      },
    });
    expect(toMermaidStateDiagram(machine)).toBe(
      lines(
        '[*] --> open',
        'open',
        'counted',
        'open --> counted : vote.cast [isOpen and (not isBlocked)]',
        'open --> counted : vote.cast [hasRole(chair)]',
        'open --> open : vote.cast [hasQuorum]',
        'open --> open : vote.cast',
        'counted --> [*]',
      ),
    );
  });

  it('labels eventless transitions `always`', () => {
    const machine = setup({ guards: { isReady: () => true } }).createMachine({
      id: 'boot',
      initial: 'checking',
      states: {
        checking: { always: [{ guard: 'isReady', target: 'ready' }, { target: 'waiting' }] },
        waiting: {},
        ready: { type: 'final' },
      },
    });
    expect(toMermaidStateDiagram(machine)).toBe(
      lines(
        '[*] --> checking',
        'checking',
        'waiting',
        'ready',
        'checking --> ready : always [isReady]',
        'checking --> waiting : always',
        'ready --> [*]',
      ),
    );
  });

  it('draws a parallel root as a composite named after the machine, its regions split by `--`', () => {
    const machine = setup({
      types: { events: {} as { type: 'bold.toggle' } | { type: 'italic.toggle' } },
    }).createMachine({
      id: 'editor',
      type: 'parallel',
      states: {
        bold: {
          initial: 'off',
          states: { off: { on: { 'bold.toggle': 'on' } }, on: { on: { 'bold.toggle': 'off' } } },
        },
        italic: {
          initial: 'plain',
          states: { plain: { on: { 'italic.toggle': 'slanted' } }, slanted: {} },
        },
      },
    });
    expect(toMermaidStateDiagram(machine)).toBe(
      lines(
        '[*] --> editor',
        'state editor {',
        '  state bold {',
        '    [*] --> off',
        '    off',
        '    on',
        '    off --> on : bold.toggle',
        '    on --> off : bold.toggle',
        '  }',
        '  --',
        '  state italic {',
        '    [*] --> plain',
        '    plain',
        '    slanted',
        '    plain --> slanted : italic.toggle',
        '  }',
        '}',
      ),
    );
  });

  it("labels an invoked actor's onDone and onError with the actor, and says which state invokes it", () => {
    const machine = setup({ actors: { fetchUser: fromPromise(async () => 'user') } }).createMachine({
      id: 'profile',
      initial: 'loading',
      states: {
        loading: {
          invoke: { src: 'fetchUser', onDone: { target: 'loaded' }, onError: { target: 'failed' } },
        },
        loaded: { type: 'final' },
        failed: { after: { 1000: { target: 'loading' } } },
      },
    });
    expect(toMermaidStateDiagram(machine)).toBe(
      lines(
        '[*] --> loading',
        'loading : invokes fetchUser',
        'loaded',
        'failed',
        'loading --> loaded : onDone(fetchUser)',
        'loading --> failed : onError(fetchUser)',
        'failed --> loading : after 1000',
        'loaded --> [*]',
      ),
    );
  });

  it('draws transitions of the root from a state named after the machine', () => {
    const machine = setup({ types: { events: {} as { type: 'app.reset' } | { type: 'app.ping' } } }).createMachine({
      id: 'app',
      initial: 'running',
      on: { 'app.reset': { target: '.running' }, 'app.ping': {} },
      states: { running: {} },
    });
    expect(toMermaidStateDiagram(machine)).toBe(
      lines(
        '[*] --> app',
        'state app {',
        '  [*] --> running',
        '  running',
        '}',
        'app --> running : app.reset',
        'app --> app : app.ping',
      ),
    );
  });
});
