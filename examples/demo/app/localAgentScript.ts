import type { LocalAgentScript, LocalAgentTurn } from '../../../providers/index';

/**
 * The local runtime's first turn: what `npm start` plays in the terminal, made for clicking.
 * The second weather lookup fails retryably and the run waits for the user's Retry; the email
 * needs an approval in the run; `send_email` is a client tool the page runs itself, with the
 * approval's data as the user approved it (edited or not).
 */
const firstTurn: LocalAgentScript = {
  // 120 ms a step: each delta is seen on screen, even by a busy page that draws a frame late.
  delayMs: 120,
  usage: { inputTokens: 42, outputTokens: 31 },
  steps: [
    { type: 'text', deltas: ['Let me check ', 'the weather ', 'in both cities.'] },
    { type: 'reasoning', deltas: ['The user wants ', 'two cities; ', 'call the weather tool twice, ', 'then email.'] },
    { type: 'task', title: 'Look up two forecasts', progress: [0.25, 0.5, 0.75, 1] },
    {
      type: 'tool',
      name: 'get_weather',
      argumentDeltas: ['{"city":', '"Paris"}'],
      result: { city: 'Paris', celsius: 14 },
    },
    {
      type: 'tool',
      name: 'get_weather',
      argumentDeltas: ['{"city":', '"Rome"}'],
      error: { message: 'upstream timeout', code: 'timeout', retryable: true },
      retryResult: { city: 'Rome', celsius: 21 },
    },
    // The run waits here for the user's next command: Retry (or goes on after two minutes).
    { type: 'await_command', timeoutMs: 120_000 },
    {
      type: 'approval',
      description: 'Email the forecast to the team?',
      risk: 'low',
      data: { to: 'team@example.com', subject: 'Forecast' },
      editable: true,
      waitFor: 'command',
    },
    {
      type: 'artifact',
      mediaType: 'text/markdown',
      title: 'Forecast',
      versions: ['# Paris\n14 °C', '# Paris\n14 °C\n\n# Rome\n21 °C'],
    },
    { type: 'text', deltas: ['Paris is 14 °C, ', 'Rome 21 °C. ', 'Sending the email now.'] },
    // A tool the application runs: the run ends waiting for its result. It sends what the
    // user approved: an edited address (Edit and approve) is the one it gets.
    {
      type: 'tool',
      name: 'send_email',
      argumentDeltas: ['{"to":', '"team@example.com"}'],
      argumentsFrom: 'approval-6',
    },
  ],
};

/**
 * A prompt that asks for it "slowly": one lookup at 400 ms a step, slow enough to watch the
 * tool call go through its machine's states in the lifecycle panel (and to stop or reload mid-run).
 */
const slowTurn: LocalAgentScript = {
  delayMs: 400,
  steps: [
    { type: 'text', deltas: ['Looking it up, ', 'slowly.'] },
    {
      type: 'tool',
      name: 'get_weather',
      argumentDeltas: ['{"city":', '"Oslo"}'],
      result: { city: 'Oslo', celsius: 9 },
    },
    { type: 'text', deltas: ['Oslo is ', '9 °C.'] },
  ],
};

function asksSlowly(input: unknown): boolean {
  if (typeof input !== 'object' || input === null || !('prompt' in input)) return false;
  return /\bslowly\b/i.test(String(input.prompt));
}

/** The script of each run: the first turn (or the slow one), or the answer after the page ran `send_email`. */
export function localAgentScript(input: unknown, turn: LocalAgentTurn): LocalAgentScript {
  if (turn.continuation === undefined) return asksSlowly(input) ? slowTurn : firstTurn;
  const result = turn.toolResults[0]?.result as { sent?: unknown; to?: unknown } | undefined;
  const text =
    result?.sent === true
      ? ['Email sent ', `to ${String(result.to)}. `, 'Anything else?']
      : ['The email was not sent. ', 'Anything else?'];
  return { delayMs: 60, steps: [{ type: 'text', deltas: text }] };
}
