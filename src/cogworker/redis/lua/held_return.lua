-- Put one held job back at the head of its queue, if this process still holds it: re-take
-- the lock the caller names (when given: missing -> set to its owner; the owner's -> TTL
-- refreshed; anyone else's -> left alone), RPUSH the raw verbatim onto the queue (the end
-- the next fetch pops), announce it on the wake-up channel, THEN drop it from the
-- in-progress list (write first, remove second).
-- A full Redis (maxmemory, noeviction) lets the move through: the no-op LTRIM of the
-- in-progress list comes first, and Redis refuses a memory-growing command in a script
-- only while the script has written nothing (see held_claim.lua).
--
-- KEYS[1]  this process's in-progress list
-- KEYS[2]  the target queue list
-- KEYS[3]  (optional) the lock to re-take with the job
-- ARGV[1]  the raw payload
-- ARGV[2]  the lock's owner ("" without a lock)
-- ARGV[3]  the lock's TTL in whole seconds
-- ARGV[4]  the wake-up pub/sub channel
-- ARGV[5]  the queue name published on it
--
-- Returns 1 when requeued, 0 when the raw was no longer on the in-progress list.
-- The wake-up PUBLISH is best-effort (pcall): when the Redis user's ACL refuses the channel,
-- the job still moves and the script still completes.
-- luacheck: globals KEYS ARGV redis

if not redis.call('LPOS', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('LTRIM', KEYS[1], 0, -1)

if KEYS[3] then
  local owner = redis.call('GET', KEYS[3])
  if not owner then
    redis.call('SET', KEYS[3], ARGV[2], 'EX', ARGV[3])
  elseif owner == ARGV[2] then
    redis.call('EXPIRE', KEYS[3], ARGV[3])
  end
end

redis.call('RPUSH', KEYS[2], ARGV[1])
redis.pcall('PUBLISH', ARGV[4], ARGV[5])
redis.call('LREM', KEYS[1], 1, ARGV[1])
return 1
