-- expire_if_owned: set a lock's TTL only while its value is still the given owner.
--
-- KEYS[1]  the lock key (its value is the owner's jid)
-- ARGV[1]  the owner expected to hold the lock
-- ARGV[2]  the new TTL in whole seconds (at least 1)
-- Returns  1 when the TTL was set, 0 when the lock is gone or held by someone else.
-- luacheck: globals KEYS ARGV redis

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return 0
