export type { AgentTransportErrorCode, AgentTransportErrorDetails } from './AgentTransportError';
export { AgentTransportError, isAbortError } from './AgentTransportError';
export { createAsyncIterableTransport } from './createAsyncIterableTransport';
export type { FixtureFrame, RecordingTransport } from './createFixtureTransport';
export { createFixtureTransport, parseFixtureRecording, recordTransport } from './createFixtureTransport';
export type { SSEChunk, SSETransportOptions } from './createSSETransport';
export { createSSETransport } from './createSSETransport';
export type { WebSocketConstructor, WebSocketLike, WebSocketTransportOptions } from './createWebSocketTransport';
export { createWebSocketTransport } from './createWebSocketTransport';
