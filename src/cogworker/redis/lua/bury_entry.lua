-- bury_entry: move an entry that is not a valid job from a sorted set into dead, wrapped
-- so that its bytes are kept, and count it as a failure.
--
-- KEYS[1]  the sorted set holding the entry (schedule or retry)
-- KEYS[2]  the dead sorted set
-- KEYS[3]  the failed-jobs counter (<ns>:stats:failed)
-- KEYS[4]  this hour's throughput hash (<ns>:throughput:<hour>)
-- ARGV[1]  the entry's raw bytes exactly as stored in KEYS[1]
-- ARGV[2]  the unparseable wrapper (a job JSON built by the client) to add to dead
-- ARGV[3]  the score for dead (time of death, epoch seconds)
-- ARGV[4]  the throughput hash TTL in seconds
-- Returns  1 when the entry was buried, 0 when it was no longer in KEYS[1].
--
-- Write first, remove second: ZADD into dead before the ZREM. The counters are best-effort.
-- luacheck: globals KEYS ARGV redis

if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.pcall('INCR', KEYS[3])
redis.pcall('HINCRBY', KEYS[4], 'failed', 1)
redis.pcall('EXPIRE', KEYS[4], ARGV[4])
return 1
