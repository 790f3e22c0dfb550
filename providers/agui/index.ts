export type { AgUIResumePayload } from './agUIResume';
export type {
  AgUIAgentInput,
  AgUIAgentProviderOptions,
  AgUIContextState,
  AgUIExtensionEvent,
} from './createAgUIAgentProvider';
export { createAgUIAgentProvider } from './createAgUIAgentProvider';
export { AgUIEventError, parseAgUIEvent, readAgUIChunk } from './parseAgUIEvent';
export { toAgUIMessages } from './toAgUIMessages';
