-- Read (writes nothing): the entries one consumer was handed and has not acknowledged, in
-- each of the given streams, oldest first, with their raw payloads. A stream that does not
-- exist, lacks the group or is not a stream gives nothing. An entry still pending but whose
-- content was deleted (XDEL without XACK, by hand) comes with no payload.
--
-- KEYS[i]  a stream (i = 1..n)
-- ARGV[1]  the consumer group
-- ARGV[2]  the consumer
-- ARGV[3]  how many entries to read at most per stream
--
-- Returns a flat list {i, id, raw, i, id, raw, ...}: the stream's position, the entry id and
-- its payload (nil for a deleted entry).
-- luacheck: globals KEYS ARGV redis

local found = {}
for i = 1, #KEYS do
  local pending = redis.pcall('XPENDING', KEYS[i], ARGV[1], '-', '+', ARGV[3], ARGV[2])
  if type(pending) == 'table' and pending.err == nil then
    for _, row in ipairs(pending) do
      local id = row[1]
      local raw = false
      local entry = redis.call('XRANGE', KEYS[i], id, id)
      if #entry == 1 then
        local fields = entry[1][2]
        for f = 1, #fields, 2 do
          if fields[f] == 'job' then
            raw = fields[f + 1]
          end
        end
      end
      found[#found + 1] = i
      found[#found + 1] = id
      found[#found + 1] = raw
    end
  end
end
return found
