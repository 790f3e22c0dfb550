/**
 * Checkpoint storage for Node (`agentstate/checkpoint/node`): files on disk. Kept out of
 * `agentstate/checkpoint` so browser bundles never see `node:fs`.
 */
export { createFileAgentCheckpointStorage, getAgentCheckpointFileName } from './createFileAgentCheckpointStorage';
