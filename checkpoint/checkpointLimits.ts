/**
 * The largest checkpoint `parseAgentCheckpoint` accepts by default: 32 MiB of JSON,
 * counted in characters as `measureJsonSize` counts them (string escapes aside). It bounds
 * every string in it too, so a hostile 50 MiB string is refused before anything reads it.
 * A long conversation is a few MiB; browser storages hold about 5 MiB (Web Storage) to a
 * share of the disk (IndexedDB).
 */
export const DEFAULT_MAX_CHECKPOINT_SIZE = 32 * 1024 * 1024;
