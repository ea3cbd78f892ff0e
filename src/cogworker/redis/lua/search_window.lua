-- search_window: look through one window of a list or sorted set for entries containing a
-- piece of text (ASCII case-insensitive), so a search sends back only the matches.
--
-- KEYS[1]  the list (a queue) or sorted set (schedule, retry, dead) to search
-- ARGV[1]  'list' or 'zset'
-- ARGV[2]  where to start: the position counted in the direction of ARGV[3] (0 = first)
-- ARGV[3]  '1': newest first (a list from its head, a sorted set by score descending);
--          '0': oldest first (a list from its tail, a sorted set by score ascending)
-- ARGV[4]  the window: how many entries to look at, at most
-- ARGV[5]  the text to find, already lower-cased (a plain substring, not a pattern)
-- ARGV[6]  the most matches to return
-- Returns  {next, examined, position1, raw1, score1, position2, raw2, score2, ...}: next is
--          the position to continue from, or -1 when the end of KEYS[1] was reached;
--          examined is how many entries were looked at; score is '' for a list.
--
-- Read-only. Each call looks at ARGV[4] entries at most, so Redis is never blocked by one
-- long scan; the caller calls again from `next` within its own budget.
-- luacheck: globals KEYS ARGV redis

local kind = ARGV[1]
local start = tonumber(ARGV[2])
local newest_first = ARGV[3] == '1'
local window = tonumber(ARGV[4])
local needle = ARGV[5]
local most = tonumber(ARGV[6])

local entries
if kind == 'list' then
  if newest_first then
    entries = redis.call('LRANGE', KEYS[1], start, start + window - 1)
  else
    local tail = redis.call('LRANGE', KEYS[1], -(start + window), -(start + 1))
    entries = {}
    for i = #tail, 1, -1 do
      entries[#entries + 1] = tail[i]
    end
  end
else
  local command = newest_first and 'ZREVRANGE' or 'ZRANGE'
  local pairs_ = redis.call(command, KEYS[1], start, start + window - 1, 'WITHSCORES')
  entries = {}
  for i = 1, #pairs_, 2 do
    entries[#entries + 1] = {pairs_[i], pairs_[i + 1]}
  end
end

local found = {0, 0}
local matches = 0
for i, entry in ipairs(entries) do
  local raw, score = entry, ''
  if kind ~= 'list' then
    raw, score = entry[1], entry[2]
  end
  if string.find(string.lower(raw), needle, 1, true) then
    found[#found + 1] = start + i - 1
    found[#found + 1] = raw
    found[#found + 1] = score
    matches = matches + 1
    if matches >= most then
      found[1] = start + i
      found[2] = i
      return found
    end
  end
end
found[2] = #entries
if #entries < window then
  found[1] = -1
else
  found[1] = start + #entries
end
return found
