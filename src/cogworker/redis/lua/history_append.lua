-- history_append: store a batch of run records in every history index, count them per UTC
-- day, then trim the history by age and by count, every index together, in one step.
--
-- KEYS[1]  hash  <ns>:history:runs   run id -> record JSON
-- KEYS[2]  zset  <ns>:history:index  the lexicographic index (see core/broker/history_index.py)
-- KEYS[3..] hash <ns>:history:daily:<YYYY-MM-DD>, one per day the batch touches, in the
--          order of the day counts below
-- ARGV[1]  max age in milliseconds: records that finished earlier than TIME - this go
-- ARGV[2]  max entries: the oldest records beyond this many go
-- ARGV[3]  a day's counts live this many milliseconds after their last write
-- ARGV[4]  the most records this call removes (the rest goes with the next batches)
-- ARGV[5]  n, the number of records
-- ARGV[6]  the caller's clock (epoch ms), used only when TIME is refused
-- then, per day key (KEYS[3], KEYS[4]...): its success count, its failed count
-- then, per record: its run id and JSON (2n values, as HSET takes them)
-- then, per record, its 7 index entries, each after a 0 score (14n values, as ZADD takes
--          them), built by core/broker/history_index.py entries_of
-- Returns  {removed by age, removed by count}
--
-- The entries of a trimmed record are built by entries() here from its stored fields; the
-- contract tests hold it to entries_of (a trim that missed one would leave it behind).
-- luacheck: globals KEYS ARGV redis cjson

if redis.replicate_commands then
  redis.replicate_commands()
end

local runs, index = KEYS[1], KEYS[2]
local max_age, max_entries = tonumber(ARGV[1]), tonumber(ARGV[2])
local daily_ttl, trim_limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local n = tonumber(ARGV[5])
local days = #KEYS - 2
local CHUNK = 2000
local SEP = '\0'

local function call_chunked(command, key, items)
  for first = 1, #items, CHUNK do
    local last = math.min(first + CHUNK - 1, #items)
    redis.call(command, key, unpack(items, first, last))
  end
end

-- the families of core/broker/history_index.py FAMILIES, in its order
local function entries(status, class, queue, jid, finished, duration, id)
  local tail = SEP .. id
  return {
    'af' .. SEP .. SEP .. finished .. tail,
    'ad' .. SEP .. SEP .. duration .. tail,
    'sf' .. SEP .. status .. SEP .. finished .. tail,
    'cf' .. SEP .. class .. SEP .. finished .. tail,
    'cd' .. SEP .. class .. SEP .. duration .. tail,
    'qf' .. SEP .. queue .. SEP .. finished .. tail,
    'jf' .. SEP .. jid .. SEP .. finished .. tail,
  }
end

-- store ---------------------------------------------------------------------------------
-- Straight from ARGV to the commands, CHUNK values a call (pairs never split: CHUNK is even).
local function call_range(command, key, first, last)
  for at = first, last, CHUNK do
    redis.call(command, key, unpack(ARGV, at, math.min(at + CHUNK - 1, last)))
  end
end

local base = 6 + 2 * days
call_range('HSET', runs, base + 1, base + 2 * n)
call_range('ZADD', index, base + 2 * n + 1, base + 16 * n)

for d = 1, days do
  local success, failed = tonumber(ARGV[5 + 2 * d]), tonumber(ARGV[6 + 2 * d])
  if success > 0 then
    redis.call('HINCRBY', KEYS[2 + d], 'success', success)
  end
  if failed > 0 then
    redis.call('HINCRBY', KEYS[2 + d], 'failed', failed)
  end
  redis.call('PEXPIRE', KEYS[2 + d], daily_ttl)
end

-- trim ----------------------------------------------------------------------------------
-- The fields the index is built from. A record's JSON starts with them, in this order and
-- compactly (HistoryRecord.to_dict), so a pattern reads them without decoding the whole
-- record (its backtrace may be kilobytes); anything else (an escaped character, another
-- writer's layout) is decoded.
local HEAD = '^{"run_id":"[^"\\]*","jid":"([^"\\]*)","class":"([^"\\]*)","queue":"([^"\\]*)",'
  .. '"status":"([^"\\]*)","started_ms":%-?%d+,"finished_ms":(%d+),"duration_us":(%d+)[,}]'

local function indexed_fields(text)
  local jid, class, queue, status, finished, duration = string.match(text, HEAD)
  if jid then
    return {jid = jid, class = class, queue = queue, status = status,
            finished_ms = tonumber(finished), duration_us = tonumber(duration)}
  end
  local ok, record = pcall(cjson.decode, text)
  return ok and record or nil
end

local function readable(record)
  if type(record) ~= 'table' then
    return false
  end
  for _, name in ipairs({'status', 'class', 'queue', 'jid'}) do
    if type(record[name]) ~= 'string' then
      return false
    end
  end
  return type(record.finished_ms) == 'number' and type(record.duration_us) == 'number'
end

local function remove(all_entries)
  if #all_entries == 0 then
    return
  end
  local ids = {}
  for i, entry in ipairs(all_entries) do
    ids[i] = string.match(entry, '([^%z]*)$')
  end
  local gone = {}
  for first = 1, #ids, CHUNK do
    local last = math.min(first + CHUNK - 1, #ids)
    local texts = redis.call('HMGET', runs, unpack(ids, first, last))
    for j = 1, last - first + 1 do
      local record = indexed_fields(texts[j] or '')
      if readable(record) then
        local finished = string.format('%013d', record.finished_ms)
        local duration = string.format('%013d', record.duration_us)
        for _, entry in ipairs(entries(record.status, record.class, record.queue,
                                       record.jid, finished, duration, ids[first + j - 1])) do
          gone[#gone + 1] = entry
        end
      else
        gone[#gone + 1] = all_entries[first + j - 1]  -- what is known of a broken record
      end
    end
  end
  call_chunked('ZREM', index, gone)
  call_chunked('HDEL', runs, ids)
end

local all_low, all_high = '[af' .. SEP .. SEP, '(af' .. SEP .. '\1'
local now_ms
local ok, t = pcall(redis.call, 'TIME')
if ok then
  now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now_ms = tonumber(ARGV[6])
end
local cutoff = string.format('%013d', math.max(now_ms - max_age, 0))
local old = redis.call('ZRANGEBYLEX', index, all_low, '(af' .. SEP .. SEP .. cutoff,
                       'LIMIT', 0, trim_limit)
remove(old)

local by_count = {}
local budget = trim_limit - #old
if budget > 0 then
  local excess = redis.call('ZLEXCOUNT', index, all_low, all_high) - max_entries
  if excess > 0 then
    by_count = redis.call('ZRANGEBYLEX', index, all_low, all_high, 'LIMIT', 0,
                          math.min(excess, budget))
    remove(by_count)
  end
end
return {#old, #by_count}
