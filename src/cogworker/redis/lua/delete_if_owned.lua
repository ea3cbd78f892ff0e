-- delete_if_owned: delete a lock only while its value is still the given owner, so a stale
-- owner can never release a lock that has passed to somebody newer.
--
-- KEYS[1]  the lock key (its value is the owner's jid)
-- ARGV[1]  the owner expected to hold the lock
-- Returns  1 when the lock was deleted, 0 when it is gone or held by someone else.
-- luacheck: globals KEYS ARGV redis

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
