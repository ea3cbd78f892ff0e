-- Push jobs onto one queue: register the queue, LPUSH the raws (the first given is the first
-- fetched), and announce the queue on the wake-up channel. One command instead of a
-- five-command MULTI, for the common case of a single immediate push.
--
-- KEYS[1]  the queue registry set (queues)
-- KEYS[2]  the queue list
-- ARGV[1]  the queue name
-- ARGV[2]  the wake-up pub/sub channel (a channel, not a key)
-- ARGV[3]  the first raw payload; more raws may follow
--
-- Returns the length of the queue after the push.
-- The wake-up PUBLISH is best-effort (pcall): when the Redis user's ACL refuses the channel,
-- the job still moves and the script still completes.
-- luacheck: globals KEYS ARGV redis

redis.call('SADD', KEYS[1], ARGV[1])
local length = redis.call('LPUSH', KEYS[2], unpack(ARGV, 3))
redis.pcall('PUBLISH', ARGV[2], ARGV[1])
return length
