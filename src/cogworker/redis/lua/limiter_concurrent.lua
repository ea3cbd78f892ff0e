-- limiter_concurrent: take one slot of a concurrent limiter, or say it is full. Holders
-- whose lease ended (on Redis's clock) are purged first; a new holder is also written to
-- its process's set of holds, so that the process's slots can be released when it is
-- declared dead.
--
-- KEYS[1]  zset <ns>:limiter:<name>:concurrent   holder -> lease end (epoch ms)
-- KEYS[2]  set  <ns>:limiter_holds:<identity>     "<name>\n<holder>" of this process
-- KEYS[3]  hash <ns>:limiter_counts                "<name>|acquired", "<name>|over"
-- ARGV[1]  the limit (holders at once)
-- ARGV[2]  the lease in milliseconds
-- ARGV[3]  the holder ("<identity>|<jid>|<token>")
-- ARGV[4]  the limiter's name
--
-- Returns  {1, -1} when the slot was taken, {0, -1} when the limiter is full (no estimate
--          of when a slot frees: holders end when their jobs do).
-- luacheck: globals KEYS ARGV redis

if redis.replicate_commands then
  redis.replicate_commands()
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local limit, lease = tonumber(ARGV[1]), tonumber(ARGV[2])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= limit then
  redis.call('HINCRBY', KEYS[3], ARGV[4] .. '|over', 1)
  return {0, -1}
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[3])
redis.call('SADD', KEYS[2], ARGV[4] .. '\n' .. ARGV[3])
if redis.call('PTTL', KEYS[2]) < lease then
  redis.call('PEXPIRE', KEYS[2], lease)
end
redis.call('HINCRBY', KEYS[3], ARGV[4] .. '|acquired', 1)
return {1, -1}
