-- limiter_bucket: take one token from a token bucket, or say it is empty and when the
-- next token comes, on Redis's clock. The bucket holds up to the burst; it refills at
-- the rate, continuously, from its last refill. A bucket left alone long enough to fill
-- needs no state: the key expires then.
--
-- KEYS[1]  hash <ns>:limiter:<name>:bucket   {t = tokens, ts = last refill (epoch ms)}
-- KEYS[2]  hash <ns>:limiter_counts          "<name>|acquired", "<name>|over"
-- ARGV[1]  the burst (tokens the bucket holds)
-- ARGV[2]  the rate, in tokens per second
-- ARGV[3]  the limiter's name
--
-- Returns  {1, -1} when a token was taken, {0, ms} when empty: ms until the next token.
-- luacheck: globals KEYS ARGV redis

if redis.replicate_commands then
  redis.replicate_commands()
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local burst, rate = tonumber(ARGV[1]), tonumber(ARGV[2])

local stored = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = burst
if stored[1] and stored[2] then
  local elapsed = math.max(0, now - tonumber(stored[2]))
  tokens = math.min(burst, tonumber(stored[1]) + elapsed * rate / 1000)
end

local admitted = tokens >= 1
if admitted then
  tokens = tokens - 1
end
redis.call('HSET', KEYS[1], 't', string.format('%.6f', tokens), 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
if admitted then
  redis.call('HINCRBY', KEYS[2], ARGV[3] .. '|acquired', 1)
  return {1, -1}
end
redis.call('HINCRBY', KEYS[2], ARGV[3] .. '|over', 1)
return {0, math.max(1, math.ceil((1 - tokens) / rate * 1000))}
