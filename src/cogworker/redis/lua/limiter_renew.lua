-- limiter_renew: extend the leases of one process's concurrent-limiter holders, from now
-- on Redis's clock. A holder already gone (released, expired, reset) is not brought back.
--
-- KEYS[1]  set  <ns>:limiter_holds:<identity>   the process's holds (its TTL is extended)
-- KEYS[2..] zset <ns>:limiter:<name>:concurrent, one per holder below, in order
-- ARGV[1]  the process's longest lease in milliseconds (the holds set lives that long)
-- then, per holder (KEYS[2], KEYS[3]...): the holder, its lease in milliseconds
--
-- Returns  how many holders were renewed.
-- luacheck: globals KEYS ARGV redis

if redis.replicate_commands then
  redis.replicate_commands()
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local renewed = 0
for i = 2, #KEYS do
  local holder, lease = ARGV[2 * i - 2], tonumber(ARGV[2 * i - 1])
  if redis.call('ZSCORE', KEYS[i], holder) then
    redis.call('ZADD', KEYS[i], now + lease, holder)
    renewed = renewed + 1
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
end
return renewed
