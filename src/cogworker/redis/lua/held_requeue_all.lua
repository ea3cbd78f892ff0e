-- Shutdown of a process that holds jobs: settle its own in-progress list in one atomic step.
-- The client read the list and planned every entry, head (most recently fetched) first:
--   "d" (finished; only its acknowledgement failed): drop it, and its orphan counter if it
--       was still held;
--   "r" (unfinished): if still held, re-take the lock the caller names for it (when it has
--       one: missing -> set to its owner; the owner's -> TTL refreshed; anyone else's ->
--       left alone), RPUSH it onto its queue (the end the next fetch pops), announce it on
--       the wake-up channel, THEN drop it from the list. Walking head first means the
--       earliest fetched job ends up nearest the pop end, so it runs first again.
-- Entries to keep ("k") are not passed and stay on the list. A shutdown requeue is not an
-- orphaning: orphan counters are left as they are.
-- A full Redis (maxmemory, noeviction) lets the move through: the no-op LTRIM of the
-- in-progress list comes first, and Redis refuses a memory-growing command in a script
-- only while the script has written nothing (see held_claim.lua).
--
-- KEYS[1]  this process's in-progress list
-- KEYS[2]  the first key an entry refers to (queue list, lock or orphan counter); more
--          follow, each referred to by its index in KEYS
-- ARGV[1]  the wake-up pub/sub channel
-- ARGV[2]  then groups of 7 per entry: action ("d" or "r"), raw payload, key index A, key
--          index B, lock owner, queue name, lock TTL in whole seconds. "d": A = orphan
--          counter, B unused. "r": A = queue, B = the lock to re-take or 0 for none.
--
-- Returns {requeued, failed}: failed entries (their queue key unusable) stay on the list.
-- The wake-up PUBLISH is best-effort (pcall): when the Redis user's ACL refuses the channel,
-- the job still moves and the script still completes.
-- luacheck: globals KEYS ARGV redis

local list = KEYS[1]
local channel = ARGV[1]
local requeued = 0
local failed = 0
redis.call('LTRIM', list, 0, -1)

local function retake(lock_key, owner, ttl)
  local held_by = redis.call('GET', lock_key)
  if not held_by then
    redis.call('SET', lock_key, owner, 'EX', ttl)
  elseif held_by == owner then
    redis.call('EXPIRE', lock_key, ttl)
  end
end

for i = 2, #ARGV, 7 do
  local action = ARGV[i]
  local raw = ARGV[i + 1]
  local a = tonumber(ARGV[i + 2])
  local b = tonumber(ARGV[i + 3])
  if action == 'd' then
    if redis.call('LREM', list, 1, raw) > 0 then
      redis.call('DEL', KEYS[a])
    end
  elseif action == 'r' and redis.call('LPOS', list, raw) then
    if b > 0 then
      pcall(retake, KEYS[b], ARGV[i + 4], ARGV[i + 6])
    end
    local pushed = redis.pcall('RPUSH', KEYS[a], raw)
    if type(pushed) == 'table' and pushed.err then
      failed = failed + 1
    else
      redis.pcall('PUBLISH', channel, ARGV[i + 5])
      redis.call('LREM', list, 1, raw)
      requeued = requeued + 1
    end
  end
end

return {requeued, failed}
