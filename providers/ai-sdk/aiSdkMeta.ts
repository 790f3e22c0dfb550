import type { AgentEventExtra } from '../../protocol/createAgentEventFactory';
import type { AISDKContext } from './aiSdkContext';

/**
 * The event's `meta.aiSdk`: the assistant UIMessage's id (from `start`) and the given wire
 * fields that are present, so `toAISDKMessages` can rebuild the parts and nothing the wire
 * said is lost. An event holds no `undefined`, which JSON cannot carry.
 */
export function aiSdkMeta(context: AISDKContext, fields: Record<string, unknown> = {}): AgentEventExtra {
  const aiSdk: Record<string, unknown> = {};
  if (context.messageId !== undefined) aiSdk.messageId = context.messageId;
  for (const field in fields) if (fields[field] !== undefined) aiSdk[field] = fields[field];
  return { meta: { aiSdk } };
}
