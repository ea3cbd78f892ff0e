-- claim_and_requeue: move one entry of a sorted set (schedule, retry or dead) onto its queue,
-- unless another process already took it.
--
-- KEYS[1]  the sorted set holding the entry (schedule, retry or dead)
-- KEYS[2]  the queue list to push onto (<ns>:queue:<name>)
-- KEYS[3]  the queue registry set (<ns>:queues)
-- ARGV[1]  the entry's raw payload exactly as stored in KEYS[1]
-- ARGV[2]  the payload to push (built by the client, e.g. with enqueued_at re-stamped)
-- ARGV[3]  the queue name (registered in KEYS[3] and published on ARGV[4])
-- ARGV[4]  the wake-up pub/sub channel (a channel, not a key)
-- Returns  1 when the entry was moved, 0 when it was no longer in KEYS[1].
--
-- Write first, remove second: the push happens before the ZREM, and a failing push (wrong
-- key type) raises before anything was written. Registering the queue and the wake-up
-- message are best-effort and never stop the move.
-- luacheck: globals KEYS ARGV redis

if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.pcall('SADD', KEYS[3], ARGV[3])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.pcall('PUBLISH', ARGV[4], ARGV[3])
return 1
