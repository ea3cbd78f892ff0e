-- File the record at the head of the unsettled list (a failure its process could not file
-- before shutting down): if the head is still ARGV[1], ZADD the payload into its sorted
-- set, THEN pop the record and delete the job's orphan counter.
--
-- KEYS[1]  the unsettled list
-- KEYS[2]  the sorted set named by the record (retry, dead or schedule)
-- KEYS[3]  the job's orphan counter
-- ARGV[1]  the record expected at the head (JSON {set, score, payload})
-- ARGV[2]  the score
-- ARGV[3]  the payload
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
return {1, redis.call('LINDEX', KEYS[1], 0)}
