import { createHash } from 'node:crypto';
import type { RedisEventLogClient } from './redisConnections';

/** A Lua script sent by SHA1 (`EVALSHA`), and in full once when the server does not know it yet. */
export interface RedisScript {
  source: string;
  sha1: string;
}

function script(source: string): RedisScript {
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

/**
 * `a > b` for two stream ids in canonical form (no leading zeros): longer digits are larger,
 * then lexicographic. Lua numbers are doubles, which would round a big sequence number.
 */
const NEWER = `
local function newer(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  if #am ~= #bm then return #am > #bm end
  if am ~= bm then return am > bm end
  if #as ~= #bs then return #as > #bs end
  return as > bs
end
`;

/**
 * Appends a batch. Each entry stores the id of the entry before it (`prev`, `0-0` for the first
 * entry of the stream), which is what lets `read` tell a trimmed gap from a contiguous read
 * in O(1): the stream's own `max-deleted-entry-id` does not move when MAXLEN trims.
 * KEYS: stream, snapshot. ARGV: trim ('~' or '='), maxlen, ttl seconds, event JSON...
 */
export const APPEND_SCRIPT = script(`
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local prev = '0-0'
if #last > 0 then prev = last[1][1] end
local ids = {}
for i = 4, #ARGV do
  prev = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], ARGV[2], '*', 'prev', prev, 'event', ARGV[i])
  ids[#ids + 1] = prev
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return ids
`);

/**
 * Reads entries after a cursor and says whether the read is whole. Answers
 * {'ok', entries}, {'expired'} or {'invalid'}.
 * KEYS: stream. ARGV: after (canonical id, or '' for the oldest retained entry), count.
 */
export const READ_SCRIPT = script(`${NEWER}
local after = ARGV[1]
if after == '' then
  return {'ok', redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', ARGV[2])}
end
local entries = redis.call('XRANGE', KEYS[1], '(' .. after, '+', 'COUNT', ARGV[2])
if #entries == 0 then
  -- MAXLEN never trims the newest entry: the last one is the last id the stream gave.
  local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
  if #last == 0 then return {'expired'} end
  if newer(after, last[1][1]) then return {'invalid'} end
  return {'ok', entries}
end
local fields = entries[1][2]
local prev = nil
for i = 1, #fields, 2 do
  if fields[i] == 'prev' then prev = fields[i + 1] end
end
-- The entry before the first one returned is newer than the cursor: it was trimmed. '0-0':
-- the cursor is older than the stream itself (the session expired and started again).
if prev ~= nil and (prev == '0-0' or newer(prev, after)) then return {'expired'} end
return {'ok', entries}
`);

/** KEYS: snapshot hash. ARGV: cursor (canonical), state JSON, ttl seconds. Answers 1 when saved. */
export const SAVE_SNAPSHOT_SCRIPT = script(`${NEWER}
local current = redis.call('HGET', KEYS[1], 'cursor')
if current and newer(current, ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'cursor', ARGV[1], 'state', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
`);

/**
 * Extends a lease, and the session's life with it: a run waiting long for its user keeps
 * the session it runs in. KEYS: lease, stream, snapshot. ARGV: owner value, ttl ms, session
 * ttl seconds. Answers 1 when the owner still held it.
 */
export const RENEW_RUN_SCRIPT = script(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[3])
return 1
`);

/** KEYS: lease. ARGV: owner value, ended marker, ttl seconds. */
export const RELEASE_RUN_SCRIPT = script(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1
`);

/** KEYS: command record. ARGV: pending record JSON, ttl ms. Answers the record already there, or nil when claimed. */
export const CLAIM_COMMAND_SCRIPT = script(`
local current = redis.call('GET', KEYS[1])
if current then return current end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`);

/**
 * Settles a command record, keeping the fingerprint of the pending one ('' when none is left),
 * and publishes the settled record. KEYS: command record. ARGV: outcome JSON, ttl ms, channel.
 */
export const SETTLE_COMMAND_SCRIPT = script(`
local current = redis.call('GET', KEYS[1])
if current then
  local ok, record = pcall(cjson.decode, current)
  if ok and type(record) == 'table' and record.status == 'settled' then return current end
end
local settled = '{"status":"settled","fingerprint":' .. cjson.encode(ARGV[4]) .. ',"outcome":' .. ARGV[1] .. '}'
redis.call('SET', KEYS[1], settled, 'PX', ARGV[2])
redis.call('PUBLISH', ARGV[3], settled)
return settled
`);

/** Runs a script by SHA1, sending its source only when the server answers NOSCRIPT (after a restart, say). */
export async function runScript<Reply>(
  client: RedisEventLogClient,
  { source, sha1 }: RedisScript,
  keys: readonly string[],
  args: readonly string[],
): Promise<Reply> {
  const rest = [String(keys.length), ...keys, ...args];
  try {
    return await client.sendCommand<Reply>(['EVALSHA', sha1, ...rest]);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return client.sendCommand<Reply>(['EVAL', source, ...rest]);
  }
}
