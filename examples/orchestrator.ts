// `npx tsx examples/orchestrator.ts`: a backend publishing workflow written as an XState machine
// of your own, with an agent run inside it. The workflow triages a request, invokes an agent
// (`fromAgentProvider`) that drafts a post and asks for approval, approves or rejects what it
// asks through `sendTo`, and publishes the agent's post. It runs on the embedded local runtime:
// no network, no key. Give the `agent` actor another provider with `machine.provide` (an
// OpenAI-compatible endpoint: tests/orchestrator.test.ts does) and nothing else changes.
import { pathToFileURL } from 'node:url';
import { assign, createActor, emit, enqueueActions, fromPromise, setup, toPromise } from 'xstate';
import type { AgentPendingInput } from '../machines/selectors';
import {
  type AgentProviderActorCommand,
  type AgentProviderActorEmitted,
  type AgentProviderActorOutput,
  fromAgentProvider,
} from '../providers/fromAgentProvider';
import { createLocalAgentProvider } from '../providers/local/createLocalAgentProvider';

export type RequestCategory = 'announcement' | 'incident' | 'other';
export type ReviewDecision = 'approved' | 'rejected';

/** What the workflow is started with: one request for a post. */
export interface PublishingRequest {
  /** The request's id; the agent's session is named after it. */
  id: string;
  request: string;
}

/** The agent's input: a prompt, and the tools of an OpenAI-compatible request (the local runtime reads the prompt). */
export interface EditorInput {
  prompt: string;
  tools?: Array<Record<string, unknown>>;
}

/**
 * How an agent on a chat-completions runtime (no approvals of its own) asks for approval: a
 * tool the application executes. The workflow answers it with `tool.submit_result`.
 */
export const REQUEST_APPROVAL_TOOL = {
  type: 'function',
  function: {
    name: 'request_approval',
    description: 'Ask the editor to approve the draft before it is published',
    parameters: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
  },
};

/** The triage step: a keyword classifier (a real workflow might ask a small model). */
export function classifyRequest(request: string): RequestCategory {
  const text = request.toLowerCase();
  if (/\b(outage|incident|breach|down)\b/.test(text)) return 'incident';
  if (/\b(launch|release|announce|new)\b/.test(text)) return 'announcement';
  return 'other';
}

/** The workflow's policy: announcements go out; anything else needs a person, so the agent's request is rejected. */
export function reviewFor(category: RequestCategory): ReviewDecision {
  return category === 'announcement' ? 'approved' : 'rejected';
}

/** The title the local editor gives a post: the request, without the ask. */
function titleOf(prompt: string): string {
  const request = prompt.split('\n').at(-1) ?? prompt;
  const subject = request.replace(/^(please\s+)?(write|draft)\s+(a\s+)?post\s+(about|on)\s+(the\s+)?/i, '');
  return subject.charAt(0).toUpperCase() + subject.slice(1).replace(/\.$/, '');
}

/**
 * The local editor agent: it drafts, asks for approval (the run ends waiting for the answer),
 * and, in the run that continues it, writes the post or says it will not.
 */
export const localEditor = createLocalAgentProvider({
  script: (input, turn) => {
    const title = titleOf(input.prompt);
    if (turn.continuation === undefined) {
      return {
        steps: [
          { type: 'reasoning', deltas: ['Short post; ', 'publishing needs sign-off.'] },
          { type: 'text', deltas: ['Draft ready: ', `"${title}".`] },
          { type: 'approval', description: `Publish the post "${title}"?`, data: { title } },
        ],
      };
    }
    const approved = turn.continuation.approvals.every((answer) => answer.decision === 'approved');
    const answer = approved ? [`# ${title}\n\n`, `${title}: available today.`] : ['Understood: not publishing.'];
    return { steps: [{ type: 'text', deltas: answer }] };
  },
});

/** The commands that answer what the agent waits for, with the workflow's decision. */
export function answersFor(pendingInput: AgentPendingInput, decision: ReviewDecision): AgentProviderActorCommand[] {
  const commands: AgentProviderActorCommand[] = pendingInput.approvals.map((approval) => ({
    type: 'approval.resolve',
    approvalId: approval.id,
    decision,
  }));
  for (const toolCall of pendingInput.toolCalls) {
    commands.push(
      toolCall.name === REQUEST_APPROVAL_TOOL.function.name
        ? { type: 'tool.submit_result', toolCallId: toolCall.id, result: { decision } }
        : {
            type: 'tool.submit_result',
            toolCallId: toolCall.id,
            error: { message: `The publishing workflow has no tool "${toolCall.name}"`, code: 'unknown_tool' },
          },
    );
  }
  return commands;
}

export type PublishingOutcome = 'published' | 'rejected' | 'failed';

export interface PublishingContext {
  id: string;
  request: string;
  category?: RequestCategory;
  decision?: ReviewDecision;
  /** The agent's post, once published. */
  post?: string;
  /** The agent's runs: the first, and the one that continued it after the decision. */
  runIds: string[];
  failure?: string;
  outcome?: PublishingOutcome;
}

export interface PublishingOutput {
  id: string;
  outcome: PublishingOutcome;
  category?: RequestCategory;
  decision?: ReviewDecision;
  post?: string;
  runIds: string[];
  failure?: string;
}

/** What the workflow reports as it goes (`actor.on('workflow.note', ...)`). */
export interface WorkflowNote {
  type: 'workflow.note';
  text: string;
}

/** A line about an agent event worth telling, or undefined. */
function describeAgentEvent(event: Extract<AgentProviderActorEmitted, { type: 'agent.event' }>['event']) {
  const run = event.runId.slice(0, 8);
  switch (event.type) {
    case 'run.started':
      return event.payload.continuesRunId === undefined ? `agent: run ${run} started` : `agent: run ${run} continues`;
    case 'approval.requested':
      return `agent: asks: ${event.payload.description ?? event.payload.approvalId}`;
    case 'approval.resolved':
      return `agent: approval ${event.payload.approvalId} ${event.payload.decision}`;
    case 'tool.requested':
      return `agent: calls ${event.payload.name}`;
    case 'run.completed':
    case 'run.failed':
    case 'run.cancelled':
      return `agent: run ${run} ${event.type.slice('run.'.length)}`;
    default:
      return undefined;
  }
}

function describeWaiting(pendingInput: AgentPendingInput): string {
  const approvals = pendingInput.approvals.map((approval) => `approval ${approval.id}`);
  const toolCalls = pendingInput.toolCalls.map((toolCall) => `tool ${toolCall.name}(${toolCall.arguments})`);
  return `agent: waits for ${[...approvals, ...toolCalls].join(', ')}`;
}

/**
 * The publishing workflow: `triage -> drafting -> published | rejected | failed`. In
 * `drafting` the agent runs; when it waits for input, the workflow decides by the request's
 * category and answers it with `sendTo`; the agent's output (its post) is what gets published.
 */
export const publishingWorkflow = setup({
  types: {
    input: {} as PublishingRequest,
    context: {} as PublishingContext,
    events: {} as AgentProviderActorEmitted,
    emitted: {} as WorkflowNote,
    output: {} as PublishingOutput,
  },
  actors: {
    triage: fromPromise<RequestCategory, { request: string }>(async ({ input }) => classifyRequest(input.request)),
    agent: fromAgentProvider<EditorInput>({ provider: localEditor }),
  },
  guards: {
    postWritten: (_, params: { decision: ReviewDecision | undefined; output: AgentProviderActorOutput }) =>
      params.decision === 'approved' && params.output.status === 'completed' && params.output.text !== undefined,
    declined: (_, params: { decision: ReviewDecision | undefined }) => params.decision === 'rejected',
  },
  actions: {
    note: emit((_, params: { text: string }) => ({ type: 'workflow.note' as const, text: params.text })),
    /** Decides on what the agent waits for, and answers it: each answer is a command sent to the agent. */
    answerAgent: enqueueActions(({ context, enqueue }, params: { pendingInput: AgentPendingInput }) => {
      const decision = context.decision ?? reviewFor(context.category ?? 'other');
      enqueue.assign({ decision });
      enqueue.emit({ type: 'workflow.note', text: `workflow: ${decision} (${context.category})` });
      for (const command of answersFor(params.pendingInput, decision)) enqueue.sendTo('agent', command);
    }),
  },
}).createMachine({
  id: 'publishing',
  context: ({ input }) => ({ id: input.id, request: input.request, runIds: [] }),
  initial: 'triage',
  states: {
    triage: {
      invoke: {
        src: 'triage',
        input: ({ context }) => ({ request: context.request }),
        onDone: {
          target: 'drafting',
          actions: [
            assign({ category: ({ event }) => event.output }),
            { type: 'note', params: ({ event }) => ({ text: `triage: ${event.output}` }) },
          ],
        },
      },
    },
    drafting: {
      invoke: {
        id: 'agent',
        src: 'agent',
        input: ({ context }) => ({
          sessionId: context.id,
          input: {
            prompt: `You are the editor. Draft a post, then ask for approval before publishing.\n${context.request}`,
            tools: [REQUEST_APPROVAL_TOOL],
          },
          forwardEvents: true,
        }),
        onDone: [
          {
            guard: {
              type: 'postWritten',
              params: ({ context, event }) => ({ decision: context.decision, output: event.output }),
            },
            target: 'published',
            actions: assign({ post: ({ event }) => event.output.text, runIds: ({ event }) => event.output.runIds }),
          },
          {
            guard: { type: 'declined', params: ({ context }) => ({ decision: context.decision }) },
            target: 'rejected',
            actions: assign({ runIds: ({ event }) => event.output.runIds }),
          },
          {
            target: 'failed',
            actions: assign({
              runIds: ({ event }) => event.output.runIds,
              failure: ({ event }) =>
                `the agent's run ended ${event.output.status}${event.output.error ? `: ${event.output.error.message}` : ''}`,
            }),
          },
        ],
        onError: {
          target: 'failed',
          actions: assign({ failure: ({ event }) => `the agent failed: ${String(event.error)}` }),
        },
      },
      on: {
        'agent.event': {
          actions: enqueueActions(({ enqueue, event }) => {
            const text = describeAgentEvent(event.event);
            if (text !== undefined) enqueue({ type: 'note', params: { text } });
          }),
        },
        'agent.waiting': {
          actions: [
            { type: 'note', params: ({ event }) => ({ text: describeWaiting(event.pendingInput) }) },
            { type: 'answerAgent', params: ({ event }) => ({ pendingInput: event.pendingInput }) },
          ],
        },
        // The agent refused an answer: the workflow cannot go on without one.
        'agent.commandFailed': {
          target: 'failed',
          actions: assign({ failure: ({ event }) => `${event.command.type} failed: ${event.error.message}` }),
        },
      },
    },
    published: { type: 'final', entry: assign({ outcome: 'published' }) },
    rejected: { type: 'final', entry: assign({ outcome: 'rejected' }) },
    failed: { type: 'final', entry: assign({ outcome: 'failed' }) },
  },
  output: ({ context }) => {
    const output: PublishingOutput = { id: context.id, outcome: context.outcome ?? 'failed', runIds: context.runIds };
    if (context.category !== undefined) output.category = context.category;
    if (context.decision !== undefined) output.decision = context.decision;
    if (context.post !== undefined) output.post = context.post;
    if (context.failure !== undefined) output.failure = context.failure;
    return output;
  },
});

/** Runs one request through the workflow, printing its notes; resolves with its output. */
export async function runPublishingWorkflow(
  request: PublishingRequest,
  print: (line: string) => void = console.log,
): Promise<PublishingOutput> {
  const workflow = createActor(publishingWorkflow, { input: request });
  workflow.on('workflow.note', ({ text }) => print(`  ${text}`));
  print(`${request.id}: "${request.request}"`);
  workflow.start();
  const output = await toPromise(workflow);
  print(`  => ${output.outcome}${output.post === undefined ? '' : `:\n${output.post.replace(/^/gm, '     | ')}`}`);
  return output;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runPublishingWorkflow({ id: 'post-1', request: 'Write a post about the new offline mode launch.' });
  await runPublishingWorkflow({ id: 'post-2', request: 'Write a post about the database outage.' });
}
