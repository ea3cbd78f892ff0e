-- Read (writes nothing): the consumers of the group in each of the given streams, with how
-- many entries each was handed and has not acknowledged. A stream that does not exist,
-- lacks the group or is not a stream gives nothing.
--
-- KEYS[i]  a stream (i = 1..n)
-- ARGV[1]  the consumer group
--
-- Returns a flat list {i, consumer, pending, i, consumer, pending, ...}.
-- luacheck: globals KEYS ARGV redis

local found = {}
for i = 1, #KEYS do
  local consumers = redis.pcall('XINFO', 'CONSUMERS', KEYS[i], ARGV[1])
  if type(consumers) == 'table' and consumers.err == nil then
    for _, fields in ipairs(consumers) do
      local name, pending = nil, 0
      for f = 1, #fields, 2 do
        if fields[f] == 'name' then
          name = fields[f + 1]
        elseif fields[f] == 'pending' then
          pending = fields[f + 1]
        end
      end
      if name then
        found[#found + 1] = i
        found[#found + 1] = name
        found[#found + 1] = pending
      end
    end
  end
end
return found
