-- Cancel a batch: mark it (no callback fires after this), list it among the cancelled
-- bids (workers skip its jobs at start), and let its data expire after the ttl.
--
-- KEYS[1]     the batch hash
-- KEYS[2]     the cancelled bids (sorted set, bid by cancel time)
-- KEYS[3..10] the batch's sets (members, unrun, pending, failed, dead, ran, ok, died)
-- ARGV[1]     the bid
-- ARGV[2]     now (epoch seconds)
-- ARGV[3]     ttl: seconds the batch's keys live from now
--
-- Returns 1 when the batch was cancelled (or already was), 0 when it is unknown.
-- luacheck: globals KEYS ARGV redis

if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSETNX', KEYS[1], 'cancelled_at', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[3]))
for i = 1, 9 do redis.call('EXPIRE', KEYS[i == 1 and 1 or i + 1], ARGV[3]) end
return 1
