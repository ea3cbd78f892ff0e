-- Add one process's gathered metrics to the minute, the hour and the running totals.
-- Called at most once a second per process: its commands grow with the series (job class
-- and queue pairs) in the batch, never with the number of runs.
--
-- KEYS[1]  the minute's hash (metrics:m:<epoch minute>)
-- KEYS[2]  the hour's hash (metrics:h:<epoch hour>)
-- KEYS[3]  the running totals hash (metrics:totals)
-- KEYS[4]  the series ranked by runs ever (metrics:rank, a sorted set)
-- KEYS[5]  the series by name, all scored 0 (metrics:names, a sorted set)
-- ARGV[1]  seconds the minute's hash is kept after this write
-- ARGV[2]  seconds the hour's hash is kept after this write
-- ARGV[3]  the worst cron lag in seconds, or "" when no slot fired
-- ARGV[4]  jobs recovered from dead processes (0 or more)
-- ARGV[5]  S, the number of series that follow; then, for each series:
--          its member ("<class>\31<queue>"), its runs, its total milliseconds, K, then K
--          pairs (field name, integer increment), e.g. "p" 12 "f" 1 "b3" 13
--
-- Fields are "<member>\31<name>"; every series together is "\30\31<name>" in the totals;
-- recovered orphans are "\30orphans" (totals), the cron lag "\30cron_lag" (minute).
-- Returns the number of series written.
-- luacheck: globals KEYS ARGV redis

local buckets = {KEYS[1], KEYS[2], KEYS[3]}
local everything = {}
local everything_ms = 0
local series = tonumber(ARGV[5])
local at = 6
for _ = 1, series do
    local member, runs, ms, count = ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2],
        tonumber(ARGV[at + 3])
    at = at + 4
    for _, key in ipairs(buckets) do
        redis.call('HINCRBYFLOAT', key, member .. '\31ms', ms)
    end
    everything_ms = everything_ms + tonumber(ms)
    for _ = 1, count do
        local name, increment = ARGV[at], tonumber(ARGV[at + 1])
        at = at + 2
        for _, key in ipairs(buckets) do
            redis.call('HINCRBY', key, member .. '\31' .. name, increment)
        end
        everything[name] = (everything[name] or 0) + increment
    end
    if tonumber(redis.call('ZINCRBY', KEYS[4], runs, member)) == runs then
        redis.call('ZADD', KEYS[5], 0, member)  -- a new series
    end
end
if series > 0 then
    redis.call('HINCRBYFLOAT', KEYS[3], '\30\31ms', tostring(everything_ms))
    for name, increment in pairs(everything) do
        redis.call('HINCRBY', KEYS[3], '\30\31' .. name, increment)
    end
end
local orphans = tonumber(ARGV[4])
if orphans > 0 then
    redis.call('HINCRBY', KEYS[3], '\30orphans', orphans)
end
if ARGV[3] ~= '' then
    local lag = tonumber(ARGV[3])
    local current = tonumber(redis.call('HGET', KEYS[1], '\30cron_lag') or '-1')
    if lag > current then
        redis.call('HSET', KEYS[1], '\30cron_lag', ARGV[3])
    end
end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[2]))
return series
