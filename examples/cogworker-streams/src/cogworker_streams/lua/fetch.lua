-- Streams fetch from several queues in one round trip: skip the paused queues; for each open
-- queue (tried in the order given) deliver to this consumer, with XREADGROUP, the entries of
-- the queue's stream that nobody was handed yet, then move jobs from the pop end of the
-- queue's list into its stream (XADD, oldest first, THEN LTRIM the list: write first,
-- remove second) and deliver those too, until ARGV[3] jobs are taken. A queue is drained
-- before the next is tried.
--
-- A stream whose consumer group is missing gets it here (XGROUP CREATE ... 0 MKSTREAM, so
-- every entry already in the stream is still delivered), and its queue is added to the
-- streams registry that orphan recovery walks. A queue or stream key of another type is
-- skipped (its position is returned) instead of failing the fetch.
-- A full Redis (maxmemory reached, noeviction) still lets a fetch through: before its first
-- memory-growing command the script writes a no-op (LTRIM of the queue list to all of
-- itself). Redis refuses a memory-growing command in a script only while the script has
-- written nothing; the move frees as much list as it fills stream.
--
-- KEYS[1]      the paused-queues set
-- KEYS[2]      the streams registry set (queue names that have a stream)
-- KEYS[2i+1]   the list of the i-th queue to try (i = 1..n)
-- KEYS[2i+2]   the stream of the i-th queue
-- ARGV[1]      the consumer group
-- ARGV[2]      the consumer (this process's identity)
-- ARGV[3]      how many jobs to take at most (>= 1)
-- ARGV[3+i]    the name of the i-th queue
--
-- Returns a flat list {o, u, p1..po, s1..su, i, id, raw, i, id, raw, ...}: o open (not paused)
-- queues and u unusable ones, their positions (1-based), then every job taken as its
-- queue's position, its stream entry id and its raw payload, in the order taken.
-- luacheck: globals KEYS ARGV redis

local group, consumer = ARGV[1], ARGV[2]
local wanted = tonumber(ARGV[3])
local count = 0
local written = false
local open, unusable, taken = {}, {}, {}

local function failed(reply)
  return type(reply) == 'table' and reply.err ~= nil
end

local function mark(list)
  if not written and not failed(redis.pcall('LTRIM', list, 0, -1)) then
    written = true
  end
end

local function ensure_group(position, list, stream)
  mark(list)
  local made = redis.pcall('XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM')
  if failed(made) and not string.find(made.err, 'BUSYGROUP', 1, true) then
    return false
  end
  redis.call('SADD', KEYS[2], ARGV[3 + position])
  return true
end

-- XREADGROUP of up to `want` new entries; false when the stream or its group is unusable
local function deliver(position, list, stream, want)
  local reply = redis.pcall('XREADGROUP', 'GROUP', group, consumer, 'COUNT', want,
                            'STREAMS', stream, '>')
  if failed(reply) then
    if not string.find(reply.err, 'NOGROUP', 1, true)
        or not ensure_group(position, list, stream) then
      return false
    end
    reply = redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', want,
                       'STREAMS', stream, '>')
  end
  if reply then
    for _, entry in ipairs(reply[1][2]) do
      local fields = entry[2]
      for f = 1, #fields, 2 do
        if fields[f] == 'job' then
          taken[#taken + 1] = position
          taken[#taken + 1] = entry[1]
          taken[#taken + 1] = fields[f + 1]
          count = count + 1
        end
      end
    end
  end
  return true
end

-- move up to `want` jobs from the pop end of the list into the stream; false when unusable
local function move(list, stream, want)
  local items = redis.pcall('LRANGE', list, -want, -1)
  if failed(items) then
    return false
  end
  if #items == 0 then
    return true
  end
  mark(list)
  for j = #items, 1, -1 do  -- the rightmost is the oldest: it gets the lowest id
    redis.call('XADD', stream, '*', 'job', items[j])
  end
  redis.call('LTRIM', list, 0, -(#items + 1))
  return true
end

local queues = (#KEYS - 2) / 2
for i = 1, queues do
  if redis.call('SISMEMBER', KEYS[1], ARGV[3 + i]) == 0 then
    local list, stream = KEYS[2 * i + 1], KEYS[2 * i + 2]
    local usable = true
    if count < wanted then
      usable = deliver(i, list, stream, wanted - count)
      if usable and count < wanted then
        usable = move(list, stream, wanted - count) and deliver(i, list, stream, wanted - count)
      end
    end
    if usable then
      open[#open + 1] = i
    else
      unusable[#unusable + 1] = i
    end
  end
end

local reply = {#open, #unusable}
for _, position in ipairs(open) do
  reply[#reply + 1] = position
end
for _, position in ipairs(unusable) do
  reply[#reply + 1] = position
end
for _, value in ipairs(taken) do
  reply[#reply + 1] = value
end
return reply
