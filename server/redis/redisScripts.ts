import { createHash } from 'node:crypto';

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

/** The value of `name` among a stream entry's fields, or nil. */
const FIELD = `
local function field(fields, name)
  for i = 1, #fields, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return nil
end
`;

/**
 * Appends a batch. Each entry stores the id of the entry before it (`prev`, `0-0` for the first
 * entry of the stream), which is what lets `read` tell a trimmed gap from a contiguous read
 * in O(1): the stream's own `max-deleted-entry-id` does not move when MAXLEN trims. It also
 * stores `at`, the bytes of events appended to the stream up to and with it, so the byte
 * bound trims the oldest entries with `XTRIM MINID`, reading only those it trims (and the
 * first it keeps). The batch key holds the ids a minute: the same batch sent again (after a
 * dropped connection) answers them instead of appending twice. With a channel, the newest id
 * is published there (`SPUBLISH`: the channel carries the session's hash tag, so it is on the
 * stream's shard), which wakes the session's followers on a cluster.
 *
 * `seen` is the newest id the appending log gave or read for the session. When it is newer
 * than the stream's newest entry, entries the log had given are gone: a failover lost writes
 * the old master acknowledged but had not replicated (or someone deleted them). The batch
 * then chains to `seen`, with ids after it, so a reader before the lost entries gets
 * `cursor_expired` instead of missing them, and one at `seen` reads on.
 * KEYS: stream, snapshot, batch. ARGV: trim ('~' or '='), maxlen, ttl seconds, max bytes,
 * channel ('' for none), seen ('' for none), event JSON...
 */
export const APPEND_SCRIPT = script(`${NEWER}${FIELD}
local done = redis.call('GET', KEYS[3])
if done then return cjson.decode(done) end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local prev = '0-0'
local at = 0
local id = '*'
if #last > 0 then
  prev = last[1][1]
  at = tonumber(field(last[1][2], 'at') or '0') or 0
  if ARGV[6] ~= '' and newer(ARGV[6], prev) then
    prev = ARGV[6]
    local ms, seq = string.match(prev, '^(%d+)-(%d+)$')
    local now = redis.call('TIME')
    -- '*' gives an id after the stream's newest entry, not after the lost ones, unless the clock is past them.
    if tonumber(ms) >= tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) then
      id = ms .. '-' .. string.format('%d', tonumber(seq) + 1)
    end
  end
end
local ids = {}
for i = 7, #ARGV do
  at = at + #ARGV[i]
  prev = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], ARGV[2], id, 'prev', prev, 'at', string.format('%d', at), 'event', ARGV[i])
  id = '*'
  ids[#ids + 1] = prev
end
-- Entries that start before 'from' are past the byte bound (the snapshot counts too).
local from = at - (tonumber(ARGV[4]) - redis.call('HSTRLEN', KEYS[2], 'state'))
local keep = nil
local passed = false
local start = '-'
local count = 1
while keep == nil do
  local page = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', count)
  count = 32
  if #page == 0 then break end
  for _, entry in ipairs(page) do
    local ends = tonumber(field(entry[2], 'at') or '')
    local event = field(entry[2], 'event') or ''
    if ends == nil or ends - #event >= from or entry[1] == prev then
      keep = entry[1]
      break
    end
    passed = true
  end
  start = '(' .. page[#page][1]
end
if passed and keep ~= nil then redis.call('XTRIM', KEYS[1], 'MINID', keep) end
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('SET', KEYS[3], cjson.encode(ids), 'EX', 60)
if ARGV[5] ~= '' then redis.call('SPUBLISH', ARGV[5], prev) end
return ids
`);

/**
 * Reads entries after a cursor and says whether the read is whole. Answers
 * {'ok', entries}, {'expired'}, {'lost'} (the entry after the cursor does not follow it: the
 * cursor is no longer an entry of the stream, lost in a failover) or {'invalid'}. With a byte bound, reads in small XRANGE
 * pages and stops before the entry that would pass it (one entry at least).
 * KEYS: stream. ARGV: after (canonical id, or '' for the oldest retained entry), count, max bytes ('' for none).
 */
export const READ_SCRIPT = script(`${NEWER}${FIELD}
local function range(start)
  if ARGV[3] == '' then return redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', ARGV[2]) end
  local budget = tonumber(ARGV[3])
  local left = tonumber(ARGV[2])
  local entries = {}
  local bytes = 0
  while left > 0 do
    local asked = math.min(left, 16)
    local page = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', asked)
    for _, entry in ipairs(page) do
      bytes = bytes + #(field(entry[2], 'event') or '')
      if #entries > 0 and bytes > budget then return entries end
      entries[#entries + 1] = entry
      left = left - 1
    end
    if #page < asked then return entries end
    start = '(' .. page[#page][1]
  end
  return entries
end
local after = ARGV[1]
if after == '' then
  return {'ok', range('-')}
end
local entries = range('(' .. after)
if #entries == 0 then
  -- MAXLEN never trims the newest entry: the last one is the last id the stream gave.
  local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
  if #last == 0 then return {'expired'} end
  if newer(after, last[1][1]) then return {'invalid'} end
  return {'ok', entries}
end
local prev = field(entries[1][2], 'prev')
if prev == nil or prev == after then return {'ok', entries} end
-- The entry before the first one returned is newer than the cursor: it was trimmed. '0-0':
-- the cursor is older than the stream itself (the session expired and started again).
if prev == '0-0' or newer(prev, after) then return {'expired'} end
-- Older: the cursor is not in the chain. An append after a failover chained to the entry
-- before the ones the old master lost.
return {'lost'}
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
 * and publishes the settled record. KEYS: command record. ARGV: outcome JSON, ttl ms, channel,
 * fingerprint, how to publish ('PUBLISH', or 'SPUBLISH' on a cluster: the channel carries the
 * session's hash tag).
 */
export const SETTLE_COMMAND_SCRIPT = script(`
local current = redis.call('GET', KEYS[1])
if current then
  local ok, record = pcall(cjson.decode, current)
  if ok and type(record) == 'table' and record.status == 'settled' then return current end
end
local settled = '{"status":"settled","fingerprint":' .. cjson.encode(ARGV[4]) .. ',"outcome":' .. ARGV[1] .. '}'
redis.call('SET', KEYS[1], settled, 'PX', ARGV[2])
redis.call(ARGV[5], ARGV[3], settled)
return settled
`);

/** Sends one command (to the node that holds the script's keys, on a cluster). */
export type RedisScriptSender = <Reply>(args: readonly string[]) => Promise<Reply>;

/** Runs a script by SHA1, sending its source only when the server answers NOSCRIPT (after a restart, say). */
export async function runScript<Reply>(
  send: RedisScriptSender,
  { source, sha1 }: RedisScript,
  keys: readonly string[],
  args: readonly string[],
): Promise<Reply> {
  const rest = [String(keys.length), ...keys, ...args];
  try {
    return await send<Reply>(['EVALSHA', sha1, ...rest]);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return send<Reply>(['EVAL', source, ...rest]);
  }
}
