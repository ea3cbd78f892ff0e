-- Put a job this process took (and holds nowhere in Redis) back on its queue: re-take the
-- lock the caller names (when given: missing -> set to its owner; the owner's -> TTL
-- refreshed; anyone else's -> left alone), RPUSH the payload onto the queue (the end the
-- next fetch pops) and announce it on the wake-up channel, in one atomic step.
--
-- KEYS[1]  the target queue list
-- KEYS[2]  (optional) the lock to re-take with the job
-- ARGV[1]  the raw payload
-- ARGV[2]  the lock's owner ("" without a lock)
-- ARGV[3]  the lock's TTL in whole seconds
-- ARGV[4]  the wake-up pub/sub channel
-- ARGV[5]  the queue name published on it
--
-- Returns the length of the queue after the push.
-- The wake-up PUBLISH is best-effort (pcall): when the Redis user's ACL refuses the channel,
-- the job still moves and the script still completes.
-- luacheck: globals KEYS ARGV redis

if KEYS[2] then
  local owner = redis.call('GET', KEYS[2])
  if not owner then
    redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3])
  elseif owner == ARGV[2] then
    redis.call('EXPIRE', KEYS[2], ARGV[3])
  end
end

local length = redis.call('RPUSH', KEYS[1], ARGV[1])
redis.pcall('PUBLISH', ARGV[4], ARGV[5])
return length
