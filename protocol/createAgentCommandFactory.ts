import type { AgentCommandOf, AgentCommandPayloadMap, AgentCommandType } from './commandSchemas';
import { AGENT_COMMAND_PROTOCOL, AGENT_COMMAND_PROTOCOL_VERSION } from './constants';
import { randomId } from './randomId';

export interface AgentCommandFactoryOptions {
  sessionId: string;
  runId: string;
  now?: () => number;
  createCommandId?: () => string;
  /** Binds one idempotency key to each new command; by default derived from its commandId. */
  createIdempotencyKey?: (commandId: string) => string;
}

export interface AgentCommandFactory {
  /** A new logical command: new commandId, new idempotency key. */
  create<Type extends AgentCommandType>(
    type: Type,
    payload: AgentCommandPayloadMap[Type],
    extra?: { meta?: Record<string, unknown> },
  ): AgentCommandOf<Type>;
  /** The same logical command sent again: same commandId and idempotency key, new timestamp. */
  resend<Type extends AgentCommandType>(command: AgentCommandOf<Type>): AgentCommandOf<Type>;
}

/**
 * Creates commands of one run. A changed decision or data is a new command with a new key;
 * a resend reuses the key so the runtime can drop the duplicate.
 *
 * @example
 * const commands = createAgentCommandFactory({ sessionId: 's1', runId: 'r1' });
 * const approve = commands.create('approval.resolve', { approvalId: 'a1', decision: 'approved' });
 * if (store.can(approve)) await send(approve);
 */
export function createAgentCommandFactory(options: AgentCommandFactoryOptions): AgentCommandFactory {
  const now = options.now ?? Date.now;
  const createCommandId = options.createCommandId ?? randomId;
  const createIdempotencyKey = options.createIdempotencyKey ?? ((commandId: string) => `idempotency:${commandId}`);

  return {
    create(type, payload, extra) {
      const commandId = createCommandId();
      const command: Record<string, unknown> = {
        commandProtocol: AGENT_COMMAND_PROTOCOL,
        commandProtocolVersion: AGENT_COMMAND_PROTOCOL_VERSION,
        type,
        commandId,
        idempotencyKey: createIdempotencyKey(commandId),
        sessionId: options.sessionId,
        runId: options.runId,
        timestamp: now(),
        payload,
      };
      if (extra?.meta !== undefined) command.meta = extra.meta;
      return command as unknown as AgentCommandOf<typeof type>;
    },
    resend(command) {
      return { ...command, timestamp: now() };
    },
  };
}
