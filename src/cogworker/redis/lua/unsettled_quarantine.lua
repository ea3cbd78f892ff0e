-- Move an unusable record at the head of the unsettled list to its quarantine list (kept
-- for humans): if the head is still ARGV[1], RPUSH it there and refresh the quarantine's
-- TTL, THEN pop it.
--
-- KEYS[1]  the unsettled list
-- KEYS[2]  the quarantine list for unsettled records
-- ARGV[1]  the record expected at the head
-- ARGV[2]  the quarantine's TTL in seconds
--
-- Returns {moved, next_head}: moved is 1 when moved, 0 when the head was not ARGV[1];
-- next_head is the list's head now (nil when empty).
-- luacheck: globals KEYS ARGV redis

local head = redis.call('LINDEX', KEYS[1], 0)
if head ~= ARGV[1] then
  return {0, head}
end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('LPOP', KEYS[1])
return {1, redis.call('LINDEX', KEYS[1], 0)}
