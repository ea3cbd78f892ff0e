-- File the job at the head of repeat_orphans into dead (it was orphaned too often): if the
-- head is still ARGV[1], ZADD the prepared dead record, THEN pop it, delete its orphan
-- counter and count the failure.
--
-- KEYS[1]  the repeat_orphans list
-- KEYS[2]  the dead sorted set
-- KEYS[3]  the job's orphan counter
-- KEYS[4]  the stats:failed counter
-- ARGV[1]  the raw payload expected at the head
-- ARGV[2]  the score (epoch seconds of death)
-- ARGV[3]  the dead record (payload with error_class, error_message, failed_at)
--
-- Returns {filed, next_head}: filed is 1 when filed, 0 when the head was not ARGV[1];
-- next_head is the list's head now (nil when empty).
-- luacheck: globals KEYS ARGV redis

local head = redis.call('LINDEX', KEYS[1], 0)
if head ~= ARGV[1] then
  return {0, head}
end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
redis.call('LPOP', KEYS[1])
redis.call('DEL', KEYS[3])
redis.call('INCR', KEYS[4])
return {1, redis.call('LINDEX', KEYS[1], 0)}
