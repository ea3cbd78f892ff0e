-- Orphan recovery, one job: if the owner of an in-progress list is dead and the list's head
-- (its most recently fetched job) is still ARGV[4], handle that job and pop it.
--
-- Dead = presence key gone AND last beat (Redis clock) older than the threshold; a stamp
-- that is not a number counts as no stamp. With ARGV[13] = "1" the caller vouches for the
-- death (a supervisor saw the process exit) and liveness is not checked.
-- Handling: bump-check the job's orphan counter (garbage in it is reset). Orphaned more than
-- max_orphanings times -> park it on repeat_orphans (if that list is unusable, file the
-- prepared dead record instead). Otherwise re-take the lock the caller names for it (when
-- given: missing -> set to its owner; the owner's -> TTL refreshed; anyone else's -> left alone),
-- RPUSH it onto its queue (the end the next fetch pops; walking the list head first makes
-- the earliest fetched job run first), announce it on the wake-up channel, SADD the queue
-- to the queue registry when no live process stamped it lately, THEN pop it and count the
-- orphaning (7-day counter). A job whose write fails moves to the list's tail (failed).
--
-- KEYS[1]   the dead process's in-progress list
-- KEYS[2]   its presence key (process:<identity>)
-- KEYS[3]   the last_beat hash
-- KEYS[4]   the job's orphan counter
-- KEYS[5]   the job's target queue list
-- KEYS[6]   the repeat_orphans list
-- KEYS[7]   the dead sorted set
-- KEYS[8]   the queue registry set
-- KEYS[9]   the live_queues sorted set
-- KEYS[10]  the stats:failed counter
-- KEYS[11]  (optional) the lock to re-take with the job
-- ARGV[1]   the identity of the list's owner
-- ARGV[2]   the dead-for threshold in seconds
-- ARGV[3]   the caller's clock (epoch seconds), used only when TIME is refused
-- ARGV[4]   the raw payload expected at the head
-- ARGV[5]   max_orphanings
-- ARGV[6]   the orphan counter's TTL in seconds
-- ARGV[7]   the target queue's name
-- ARGV[8]   the lock's owner ("" without a lock)
-- ARGV[9]   the lock's TTL in whole seconds
-- ARGV[10]  seconds within which a live_queues stamp means "some live process reads it"
-- ARGV[11]  the wake-up pub/sub channel
-- ARGV[12]  the dead record to file when repeat_orphans is unusable
-- ARGV[13]  "1" when the death is vouched for (no liveness check), else "0"
--
-- Returns {status, unlisted, next_head}: status is "alive", "changed" (the head is not
-- ARGV[4]), "requeued", "parked", "buried" (dead record filed) or "failed"; unlisted is 1
-- when the queue was added to the registry; next_head is the list's head now (nil if empty).
-- The wake-up PUBLISH is best-effort (pcall): when the Redis user's ACL refuses the channel,
-- the job still moves and the script still completes.
-- luacheck: globals KEYS ARGV redis

if redis.replicate_commands then
  redis.replicate_commands()
end

local list = KEYS[1]

local function server_now()
  local ok, t = pcall(redis.call, 'TIME')
  if ok then
    return tonumber(t[1]) + tonumber(t[2]) / 1000000
  end
  return tonumber(ARGV[3])
end

local function failed_call(reply)
  return type(reply) == 'table' and reply.err ~= nil
end

local now = server_now()
if ARGV[13] ~= '1' then
  if redis.call('EXISTS', KEYS[2]) == 1 then
    return {'alive', 0, false}
  end
  local stamp = redis.pcall('HGET', KEYS[3], ARGV[1])
  local last = (not failed_call(stamp)) and tonumber(stamp) or nil
  if last and now - last <= tonumber(ARGV[2]) then
    return {'alive', 0, false}
  end
end

local head = redis.call('LINDEX', list, 0)
if head ~= ARGV[4] then
  return {'changed', 0, head}
end

local function rotate()
  redis.call('LPOP', list)
  redis.call('RPUSH', list, head)
  return {'failed', 0, redis.call('LINDEX', list, 0)}
end

local stored = redis.pcall('GET', KEYS[4])
local count = (not failed_call(stored)) and tonumber(stored) or nil
if count == nil then
  if stored then
    redis.call('DEL', KEYS[4])
  end
  count = 0
end

if count + 1 > tonumber(ARGV[5]) then
  local status = 'parked'
  if failed_call(redis.pcall('RPUSH', KEYS[6], head)) then
    if failed_call(redis.pcall('ZADD', KEYS[7], now, ARGV[12])) then
      return rotate()
    end
    redis.call('INCR', KEYS[10])
    status = 'buried'
  end
  redis.call('LPOP', list)
  return {status, 0, redis.call('LINDEX', list, 0)}
end

if KEYS[11] then
  local owner = redis.pcall('GET', KEYS[11])
  if owner == false then
    redis.pcall('SET', KEYS[11], ARGV[8], 'EX', ARGV[9])
  elseif owner == ARGV[8] then
    redis.pcall('EXPIRE', KEYS[11], ARGV[9])
  end
end
if failed_call(redis.pcall('RPUSH', KEYS[5], head)) then
  return rotate()
end
redis.pcall('PUBLISH', ARGV[11], ARGV[7])

local unlisted = 0
local seen = redis.pcall('ZSCORE', KEYS[9], ARGV[7])
if not failed_call(seen) and (not seen or now - tonumber(seen) > tonumber(ARGV[10])) then
  if not failed_call(redis.pcall('SADD', KEYS[8], ARGV[7])) then
    unlisted = 1
  end
end

redis.call('LPOP', list)
redis.call('INCR', KEYS[4])
redis.call('EXPIRE', KEYS[4], ARGV[6])
return {'requeued', unlisted, redis.call('LINDEX', list, 0)}
