/** Name of the event protocol every provider declares in `provider.protocol.name`. */
export const AGENT_EVENT_PROTOCOL = 'agent-event' as const;

/** Version of the event protocol; every event carries it as `protocolVersion`. */
export const AGENT_EVENT_PROTOCOL_VERSION = '0.1' as const;

/** Name of the command protocol; every command carries it as `commandProtocol`. */
export const AGENT_COMMAND_PROTOCOL = 'agent-command' as const;

/** Version of the command protocol, negotiated apart from the event protocol. */
export const AGENT_COMMAND_PROTOCOL_VERSION = '0.1' as const;

export type AgentEventProtocolVersion = typeof AGENT_EVENT_PROTOCOL_VERSION;
export type AgentCommandProtocolVersion = typeof AGENT_COMMAND_PROTOCOL_VERSION;
