-- set_clear: empty a sorted set (schedule, retry or dead) in one atomic step. When the
-- caller still has work to do with the entries (dropping the failure trails of their jids),
-- the set is renamed aside instead of deleted, with a TTL so a caller that dies meanwhile
-- leaves nothing behind for long; the caller reads the copy in bounded steps, then
-- deletes it.
--
-- KEYS[1]  the sorted set to empty
-- KEYS[2]  the name to rename it to (same hash slot: built under the namespace's prefix)
-- ARGV[1]  "1" to rename aside, "0" to delete
-- ARGV[2]  the renamed copy's TTL in seconds
--
-- Returns how many entries the set held.
-- luacheck: globals KEYS ARGV redis

local count = redis.call('ZCARD', KEYS[1])
if count == 0 then
  return 0
end
if ARGV[1] == '1' then
  redis.call('RENAME', KEYS[1], KEYS[2])
  redis.call('EXPIRE', KEYS[2], ARGV[2])
else
  redis.call('DEL', KEYS[1])
end
return count
