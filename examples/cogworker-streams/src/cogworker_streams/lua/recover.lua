-- Orphan recovery, one dead consumer of one stream: if the consumer's process is dead, take
-- each given entry still pending to it and put its job back on the queue, in one atomic
-- step.
--
-- Dead = presence key gone AND last beat (Redis clock) older than the threshold; a stamp
-- that is not a number counts as no stamp. An empty threshold skips the check (something
-- outside Redis vouched for the death).
-- Per entry, most recently delivered first: skip it unless it is still pending to the dead
-- consumer (XPENDING); XCLAIM it for the recovering consumer (which ends the dead one's
-- hold and returns the payload); bump-check the job's orphan counter (garbage in it is
-- reset). Orphaned more than max_orphanings times -> RPUSH it onto repeat_orphans (on its
-- way to dead). Otherwise re-take its lock (when given), RPUSH it onto the pop end of its
-- queue and announce it on the wake-up channel. THEN XACK + XDEL the entry and count the
-- orphaning (7-day counter). A write the server refuses hands the entry back to the dead
-- consumer (XCLAIM JUSTID) for the next pass. Afterwards the queue is added to the queue
-- registry when no live process stamped it lately, and a dead consumer left with nothing
-- pending is deleted from the group.
--
-- KEYS[1]   the stream
-- KEYS[2]   the dead consumer's presence key (process:<identity>)
-- KEYS[3]   the last_beat hash
-- KEYS[4]   the queue list the jobs go back on
-- KEYS[5]   the repeat_orphans list
-- KEYS[6]   the queue registry set
-- KEYS[7]   the live_queues sorted set
-- KEYS[k]   (k > 7) the entries' orphan counters and locks, referred to by k
-- ARGV[1]   the consumer group
-- ARGV[2]   the dead consumer (its process identity)
-- ARGV[3]   the recovering consumer (this process's identity)
-- ARGV[4]   the dead-for threshold in seconds; empty: do not check
-- ARGV[5]   the caller's clock (epoch seconds), used only when TIME is refused
-- ARGV[6]   max_orphanings
-- ARGV[7]   the orphan counter's TTL in seconds
-- ARGV[8]   the queue's name
-- ARGV[9]   seconds within which a live_queues stamp means "some live process reads it"
-- ARGV[10]  the wake-up pub/sub channel
-- ARGV[11..] 5 per entry: entry id, k of its orphan counter, k of its lock (0: none), the
--            lock's owner, the lock's TTL in whole seconds
--
-- Returns {status, requeued, parked, failed, changed, unlisted, forgotten}: status is
-- "alive" (nothing done) or "done"; changed counts entries no longer pending to the dead
-- consumer (or deleted by hand: those are acknowledged away); unlisted is 1 when the
-- queue was added to the registry; forgotten is 1 when the consumer was deleted.
-- The wake-up PUBLISH is best-effort (pcall).
-- luacheck: globals KEYS ARGV redis

if redis.replicate_commands then
  redis.replicate_commands()
end

local stream, group, dead, recoverer = KEYS[1], ARGV[1], ARGV[2], ARGV[3]

local function failed(reply)
  return type(reply) == 'table' and reply.err ~= nil
end

local function server_now()
  local ok, t = pcall(redis.call, 'TIME')
  if ok then
    return tonumber(t[1]) + tonumber(t[2]) / 1000000
  end
  return tonumber(ARGV[5])
end

local now = server_now()
if ARGV[4] ~= '' then
  if redis.call('EXISTS', KEYS[2]) == 1 then
    return {'alive', 0, 0, 0, 0, 0, 0}
  end
  local stamp = redis.pcall('HGET', KEYS[3], dead)
  local last = (not failed(stamp)) and tonumber(stamp) or nil
  if last and now - last <= tonumber(ARGV[4]) then
    return {'alive', 0, 0, 0, 0, 0, 0}
  end
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

local function orphanings(counter)
  local stored = redis.pcall('GET', counter)
  local count = (not failed(stored)) and tonumber(stored) or nil
  if count == nil then
    if stored then
      redis.call('DEL', counter)
    end
    count = 0
  end
  return count
end

local function relock(lock, owner, ttl)
  local current = redis.pcall('GET', lock)
  if current == false then
    redis.pcall('SET', lock, owner, 'EX', ttl)
  elseif current == owner then
    redis.pcall('EXPIRE', lock, ttl)
  end
end

-- 'requeued', 'parked', 'failed' or 'changed' for one entry
local function recover(id, counter, lock, owner, ttl)
  local pending = redis.pcall('XPENDING', stream, group, id, id, 1, dead)
  if failed(pending) or #pending == 0 then
    return 'changed'
  end
  local claimed = redis.call('XCLAIM', stream, group, recoverer, 0, id)
  local raw = claimed[1] and payload_of(claimed[1])
  if not raw then  -- deleted by hand while pending: nothing to requeue
    redis.call('XACK', stream, group, id)
    return 'changed'
  end
  local target, status = KEYS[4], 'requeued'
  if orphanings(counter) + 1 > tonumber(ARGV[6]) then
    target, status = KEYS[5], 'parked'
  elseif lock then
    relock(lock, owner, ttl)
  end
  if failed(redis.pcall('RPUSH', target, raw)) then
    redis.call('XCLAIM', stream, group, dead, 0, id, 'JUSTID')
    return 'failed'
  end
  if status == 'requeued' then
    redis.pcall('PUBLISH', ARGV[10], ARGV[8])
    redis.call('INCR', counter)
    redis.call('EXPIRE', counter, ARGV[7])
  end
  redis.call('XACK', stream, group, id)
  redis.call('XDEL', stream, id)
  return status
end

local tally = {requeued = 0, parked = 0, failed = 0, changed = 0}
for first = 11, #ARGV, 5 do
  local lock_at = tonumber(ARGV[first + 2])
  local status = recover(ARGV[first], KEYS[tonumber(ARGV[first + 1])],
                         lock_at > 0 and KEYS[lock_at] or nil, ARGV[first + 3], ARGV[first + 4])
  tally[status] = tally[status] + 1
end

local unlisted = 0
if tally.requeued > 0 then
  local seen = redis.pcall('ZSCORE', KEYS[7], ARGV[8])
  if not failed(seen) and (not seen or now - tonumber(seen) > tonumber(ARGV[9])) then
    if not failed(redis.pcall('SADD', KEYS[6], ARGV[8])) then
      unlisted = 1
    end
  end
end

local forgotten = 0
local left = redis.pcall('XPENDING', stream, group, '-', '+', 1, dead)
if not failed(left) and #left == 0 then
  redis.pcall('XGROUP', 'DELCONSUMER', stream, group, dead)
  forgotten = 1
end
return {'done', tally.requeued, tally.parked, tally.failed, tally.changed, unlisted, forgotten}
