-- history_page: read one page of the run history from one family of its lexicographic
-- index (see core/broker/history_index.py), checking the query's other conditions on each
-- record, so only the matching records travel back.
--
-- KEYS[1]  hash  <ns>:history:runs   run id -> record JSON
-- KEYS[2]  zset  <ns>:history:index  the lexicographic index
-- ARGV[1]  the low bound, ZRANGEBYLEX syntax ('[entry' inclusive, '(entry' exclusive)
-- ARGV[2]  the high bound, same syntax
-- ARGV[3]  '1': from the high bound down (newest or slowest first); '0': upwards
-- ARGV[4]  how many entries to skip first (an offset; 0 when paging by cursor)
-- ARGV[5]  the most records to return
-- ARGV[6]  the most entries to look at when checking conditions (ignored without any)
-- ARGV[7]  status the record must have, or ''
-- ARGV[8]  class, or ''
-- ARGV[9]  queue, or ''
-- ARGV[10] jid, or ''
-- ARGV[11] finished_ms at least this, or ''
-- ARGV[12] finished_ms at most this, or ''
-- Returns  {cursor, examined, json1, json2...}: cursor is the last entry looked at when more
--          may follow ('' at the end); examined is how many entries were looked at.
--
-- Read-only, and bounded: at most ARGV[5] + 1 entries without conditions, ARGV[6] with.
-- luacheck: globals KEYS ARGV redis cjson

local runs, index = KEYS[1], KEYS[2]
local low, high, descending = ARGV[1], ARGV[2], ARGV[3] == '1'
local offset, limit, window = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local checks = {status = ARGV[7], class = ARGV[8], queue = ARGV[9], jid = ARGV[10]}
local from_ms, to_ms = tonumber(ARGV[11]), tonumber(ARGV[12])

local checking = from_ms ~= nil or to_ms ~= nil
for _, value in pairs(checks) do
  if value ~= '' then
    checking = true
  end
end

local fetch = checking and window or limit + 1
local entries
if descending then
  entries = redis.call('ZREVRANGEBYLEX', index, high, low, 'LIMIT', offset, fetch)
else
  entries = redis.call('ZRANGEBYLEX', index, low, high, 'LIMIT', offset, fetch)
end
if #entries == 0 then
  return {'', 0}
end

local function id_of(entry)
  return string.match(entry, '([^%z]*)$')
end

-- A cheap look for '"name":"value"' before decoding, where the value needs no escaping in
-- JSON (the records are written compactly, keys in a fixed order): most records that fail
-- a check are rejected without cjson.
local quick = {}
for name, value in pairs(checks) do
  if value ~= '' and string.match(value, '^[%w%._:%-]+$') then
    quick[#quick + 1] = '"' .. name .. '":"' .. value .. '"'
  end
end

local function matches(text)
  if not checking then
    return true
  end
  for _, needle in ipairs(quick) do
    if not string.find(text, needle, 1, true) then
      return false
    end
  end
  local ok, record = pcall(cjson.decode, text)
  if not ok or type(record) ~= 'table' then
    return false
  end
  for name, value in pairs(checks) do
    if value ~= '' and record[name] ~= value then
      return false
    end
  end
  local finished = tonumber(record.finished_ms)
  if finished == nil then
    return false
  end
  return (from_ms == nil or finished >= from_ms) and (to_ms == nil or finished <= to_ms)
end

-- Records are read CHUNK at a time, so a page found early reads no more than it needs.
local CHUNK = 100
local out = {'', 0}
local found = 0
local candidates = math.min(#entries, checking and fetch or limit)
local looked = candidates
local first = 1
while first <= candidates and found < limit do
  local last = math.min(first + CHUNK - 1, candidates)
  local ids = {}
  for i = first, last do
    ids[#ids + 1] = id_of(entries[i])
  end
  local texts = redis.call('HMGET', runs, unpack(ids))
  for i = first, last do
    local text = texts[i - first + 1]
    if text and matches(text) then
      out[#out + 1] = text
      found = found + 1
      if found >= limit then
        looked = i
        break
      end
    end
  end
  first = last + 1
end
out[2] = looked
if looked < #entries or (#entries == fetch and checking) then
  out[1] = entries[looked]
end
return out
