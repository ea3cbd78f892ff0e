-- Settle stream entries this consumer was handed, all in one atomic step. Each entry acts
-- only while it is still pending to this consumer with the expected payload (else 0,
-- nothing written for it); its write comes first, then XACK + XDEL remove the entry:
--   ack      done, or its failure filed: XACK + XDEL, then forget its orphan counter
--   requeue  not started (give-back, shutdown): re-take its lock (missing: set to the owner;
--            the owner's: TTL refreshed; anyone else's: left alone), RPUSH the raw onto the
--            pop end of its queue, announce the queue on the wake-up channel, XACK + XDEL
--   file     the interrupt path: ZADD the record into its set, XACK + XDEL, forget the
--            orphan counter
--   park     the unsettled hand-over: RPUSH the {set, score, payload} record onto the
--            unsettled list, XACK + XDEL (the job ran: never requeued)
-- A write the server refuses (a key of another type) leaves that entry pending (-1).
-- A full Redis (maxmemory, noeviction) lets every action through: a no-op write (XACK of
-- id 0-0) comes first, and Redis refuses a memory-growing command in a script only while
-- the script has written nothing; settling frees what it fills.
--
-- KEYS[k]     every key the entries name, each once (streams, queue lists, locks, sorted
--             sets, the unsettled list, orphan counters); entries refer to them by k
-- ARGV[1]     the consumer group
-- ARGV[2]     the consumer (this process's identity)
-- ARGV[3]     the wake-up pub/sub channel
-- ARGV[4..]   9 per entry: action, k of its stream, entry id, raw payload, k of key a,
--             k of key b (0: none), then arg a, arg b, arg c:
--               ack      a = orphan counter
--               requeue  a = queue list, b = lock; arg a = queue name (published),
--                        arg b = lock owner, arg c = lock TTL in whole seconds
--               file     a = sorted set, b = orphan counter; arg a = score, arg b = record
--               park     a = unsettled list; arg a = record
--
-- Returns one outcome per entry, in order: 1 settled, 0 not held, -1 write refused.
-- The wake-up PUBLISH is best-effort (pcall): when the Redis user's ACL refuses the channel,
-- the job still moves and the script still completes.
-- luacheck: globals KEYS ARGV redis

local group, consumer, channel = ARGV[1], ARGV[2], ARGV[3]
local written = false

local function failed(reply)
  return type(reply) == 'table' and reply.err ~= nil
end

local function payload_of(entry)
  local fields = entry[2]
  for f = 1, #fields, 2 do
    if fields[f] == 'job' then
      return fields[f + 1]
    end
  end
  return nil
end

local function held(stream, id, raw)
  local pending = redis.pcall('XPENDING', stream, group, id, id, 1, consumer)
  if failed(pending) or #pending == 0 then
    return false
  end
  local entry = redis.call('XRANGE', stream, id, id)
  return #entry == 1 and payload_of(entry[1]) == raw
end

local function relock(lock, owner, ttl)
  local current = redis.pcall('GET', lock)
  if current == false then
    redis.pcall('SET', lock, owner, 'EX', ttl)
  elseif current == owner then
    redis.pcall('EXPIRE', lock, ttl)
  end
end

-- the write of one action: true when written
local function write(action, raw, a, b, arg_a, arg_b, arg_c)
  if action == 'requeue' then
    if b then
      relock(b, arg_b, arg_c)
    end
    if failed(redis.pcall('RPUSH', a, raw)) then
      return false
    end
    redis.pcall('PUBLISH', channel, arg_a)
  elseif action == 'file' then
    if failed(redis.pcall('ZADD', a, arg_a, arg_b)) then
      return false
    end
  elseif action == 'park' then
    if failed(redis.pcall('RPUSH', a, arg_a)) then
      return false
    end
  end
  return true
end

local actions = {ack = true, requeue = true, file = true, park = true}
for first = 4, #ARGV, 9 do
  if not actions[ARGV[first]] then
    return redis.error_reply('settle.lua: unknown action ' .. tostring(ARGV[first]))
  end
end

local outcomes = {}
for first = 4, #ARGV, 9 do
  local action, stream, id, raw = ARGV[first], KEYS[tonumber(ARGV[first + 1])],
    ARGV[first + 2], ARGV[first + 3]
  local a_at, b_at = tonumber(ARGV[first + 4]), tonumber(ARGV[first + 5])
  local a = a_at > 0 and KEYS[a_at] or nil
  local b = b_at > 0 and KEYS[b_at] or nil
  local outcome = 0
  if held(stream, id, raw) then
    if not written then
      redis.pcall('XACK', stream, group, '0-0')
      written = true
    end
    if write(action, raw, a, b, ARGV[first + 6], ARGV[first + 7], ARGV[first + 8]) then
      redis.call('XACK', stream, group, id)
      redis.call('XDEL', stream, id)
      local counter = (action == 'ack' and a) or (action == 'file' and b) or nil
      if counter then
        redis.call('DEL', counter)
      end
      outcome = 1
    else
      outcome = -1
    end
  end
  outcomes[#outcomes + 1] = outcome
end
return outcomes
