-- Reliable fetch from several queues in one round trip: move up to ARGV[1] jobs, each
-- atomically, from the queues (tried in the order given) onto this process's in-progress
-- list. A queue is drained before the next one is tried. A batch from one queue costs three
-- commands (LRANGE, LPUSH, LTRIM) instead of one LMOVE per job; the in-progress list is
-- written before the queue is trimmed, so an error in between duplicates, never loses.
--
-- KEYS[1]      the first queue list to try; more queue lists follow, in the order to try
-- KEYS[#KEYS]  (last) this process's in-progress list
-- ARGV[1]      how many jobs to take at most (>= 1)
--
-- Returns a flat list {queue_key, raw, queue_key, raw, ...} in the order the jobs were
-- taken; empty when every queue is empty.
-- luacheck: globals KEYS ARGV redis

local inprogress = KEYS[#KEYS]
local wanted = tonumber(ARGV[1])
local taken = {}
local count = 0

for i = 1, #KEYS - 1 do
  local want = wanted - count
  -- the rightmost entries are the oldest: the last element is the next to run
  local items = redis.call('LRANGE', KEYS[i], -want, -1)
  if #items > 0 then
    local ordered = {}
    for j = #items, 1, -1 do
      ordered[#ordered + 1] = items[j]
      taken[#taken + 1] = KEYS[i]
      taken[#taken + 1] = items[j]
    end
    redis.call('LPUSH', inprogress, unpack(ordered))
    redis.call('LTRIM', KEYS[i], 0, -(#items + 1))
    count = count + #items
  end
  if count >= wanted then
    break
  end
end

return taken
