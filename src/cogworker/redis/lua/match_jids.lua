-- match_jids: look through one window of a list or sorted set for the jobs with any of the
-- given jids, so finding where a few jobs are never copies a whole set out of Redis.
--
-- KEYS[1]  the list (a queue or an in-progress list) or sorted set (schedule, retry, dead)
-- ARGV[1]  'list' or 'zset'
-- ARGV[2]  where to start: an index from the head (list) or a rank from the lowest score
-- ARGV[3]  the window: how many entries to look at, at most
-- ARGV[4...] the jids wanted
-- Returns  {next, examined, raw1, raw2, ...}: next is the index to continue from, or -1 when
--          the end of KEYS[1] was reached; examined is how many entries were looked at; each
--          raw is an entry holding a wanted jid in a "jid" field (the caller parses it to be
--          sure it is the job's own jid).
--
-- Read-only; each call looks at ARGV[3] entries at most, so Redis is never blocked long.
-- luacheck: globals KEYS ARGV redis

local start = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local wanted = {}
for i = 4, #ARGV do
  wanted[ARGV[i]] = true
end

local entries
if ARGV[1] == 'list' then
  entries = redis.call('LRANGE', KEYS[1], start, start + window - 1)
else
  entries = redis.call('ZRANGE', KEYS[1], start, start + window - 1)
end

local found = {-1, #entries}
if #entries == window then
  found[1] = start + window
end
for _, raw in ipairs(entries) do
  for jid in string.gmatch(raw, '"jid":"([^"]*)"') do
    if wanted[jid] then
      found[#found + 1] = raw
      break
    end
  end
end
return found
