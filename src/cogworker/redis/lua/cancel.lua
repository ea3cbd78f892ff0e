-- Cancel one job: record the cancellation first, remove the waiting entry second, then
-- announce the jid. One step, so a removed job always has its cancellation on record.
--
-- KEYS[1]  the cancellations (cancelled, a sorted set: jid scored by its expiry)
-- KEYS[2]  where the job waits: its queue (a list), the schedule or the retry set (sorted
--          sets); KEYS[1] again when ARGV[5] is "" (nothing to remove)
-- ARGV[1]  the jid
-- ARGV[2]  when the cancellation expires (epoch seconds)
-- ARGV[3]  now (epoch seconds): cancellations expired by then are dropped
-- ARGV[4]  the announcement channel (cancel)
-- ARGV[5]  "list" (KEYS[2] is a queue), "zset" (the schedule or the retry set), or ""
--          (nothing to remove)
-- ARGV[6]  the job's exact stored entry (when ARGV[5] is not "")
--
-- Returns 1 when the entry was removed, 0 when it was not (none given, or it had moved).
-- luacheck: globals KEYS ARGV redis

redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
local removed = 0
if ARGV[5] == 'list' then
    removed = redis.call('LREM', KEYS[2], 1, ARGV[6])
elseif ARGV[5] == 'zset' then
    removed = redis.call('ZREM', KEYS[2], ARGV[6])
end
redis.call('PUBLISH', ARGV[4], ARGV[1])
return removed
