/**
 * Checkpoint storage for Node (`agent-machines/checkpoint/node`): files on disk. Kept out of
 * `agent-machines/checkpoint` so browser bundles never see `node:fs`.
 */
export { createFileAgentCheckpointStorage, getAgentCheckpointFileName } from './createFileAgentCheckpointStorage';
