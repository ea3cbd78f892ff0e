-- limiter_window: admit one more into a fixed or sliding window limiter, or say it is full
-- and when the window will have room, on Redis's clock.
--
-- Fixed windows are counted from the epoch in steps of the window's length; the state is
-- a hash {w = window number, n = admissions in it}. Sliding windows keep the admissions
-- of the last window's length in a zset scored by their time.
--
-- KEYS[1]  hash <ns>:limiter:<name>:fixed, or zset <ns>:limiter:<name>:sliding
-- KEYS[2]  hash <ns>:limiter_counts   "<name>|acquired", "<name>|over"
-- ARGV[1]  the limit (admissions per window)
-- ARGV[2]  the window's length in milliseconds
-- ARGV[3]  "1" for a sliding window, "0" for a fixed one
-- ARGV[4]  the limiter's name
-- ARGV[5]  a token unique to this call (a sliding window's member)
--
-- Returns  {1, -1} when admitted, {0, ms} when full: ms until the window has room.
-- luacheck: globals KEYS ARGV redis

if redis.replicate_commands then
  redis.replicate_commands()
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local limit, per = tonumber(ARGV[1]), tonumber(ARGV[2])

local function refuse(wait)
  redis.call('HINCRBY', KEYS[2], ARGV[4] .. '|over', 1)
  return {0, math.max(1, math.ceil(wait))}
end

if ARGV[3] == '1' then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - per)
  if redis.call('ZCARD', KEYS[1]) >= limit then
    local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    return refuse(tonumber(oldest[2]) + per - now)
  end
  redis.call('ZADD', KEYS[1], now, now .. '-' .. ARGV[5])
  redis.call('PEXPIRE', KEYS[1], per)
else
  local window = math.floor(now / per)
  local stored = redis.call('HMGET', KEYS[1], 'w', 'n')
  local count = 0
  if tonumber(stored[1]) == window then
    count = tonumber(stored[2]) or 0
  end
  if count >= limit then
    return refuse((window + 1) * per - now)
  end
  redis.call('HSET', KEYS[1], 'w', window, 'n', count + 1)
  redis.call('PEXPIRE', KEYS[1], (window + 1) * per - now + 1000)
end
redis.call('HINCRBY', KEYS[2], ARGV[4] .. '|acquired', 1)
return {1, -1}
