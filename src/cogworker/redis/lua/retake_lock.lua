-- retake_lock: make sure a lock is held by the given owner.
--
-- Missing: take it for the owner. Held by the owner: refresh its TTL. Held by someone else
-- (a newer job, say): leave it alone.
--
-- KEYS[1]  the lock key (its value is the owner's jid)
-- ARGV[1]  the owner
-- ARGV[2]  the TTL in whole seconds
--
-- Returns  1 when the owner holds the lock afterwards, 0 when someone else holds it.
-- luacheck: globals KEYS ARGV redis

local owner = redis.call('GET', KEYS[1])
if not owner then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
if owner == ARGV[1] then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
