-- Reliable fetch from several queues in one round trip: move up to ARGV[1] jobs, each
-- atomically, from the queues (tried in the order given) onto this process's in-progress
-- list. A queue is drained before the next one is tried.
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
  while count < wanted do
    local raw = redis.call('LMOVE', KEYS[i], inprogress, 'RIGHT', 'LEFT')
    if not raw then
      break
    end
    taken[#taken + 1] = KEYS[i]
    taken[#taken + 1] = raw
    count = count + 1
  end
  if count >= wanted then
    break
  end
end

return taken
