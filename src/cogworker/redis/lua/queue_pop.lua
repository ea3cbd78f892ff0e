-- queue_pop: take up to ARGV[1] jobs off the pop ends (the right) of the queue lists, the
-- first list drained before the next is tried, without waiting. Each job leaves its queue
-- for the caller's memory only (a strategy that holds nothing: the built-in basic).
-- RPOP one at a time, so any Redis version runs it (RPOP's count needs 6.2).
--
-- KEYS[1]  the first queue list to try; more queue lists follow, in the order to try
-- ARGV[1]  how many jobs to take at most (>= 1)
--
-- Returns a flat list {i, raw, i, raw, ...}: the position (1-based) in KEYS of the queue
-- each job came from, and the job, in the order taken.
-- luacheck: globals KEYS ARGV redis

local wanted = tonumber(ARGV[1])
local taken = {}
local count = 0
for i = 1, #KEYS do
  while count < wanted do
    local raw = redis.call('RPOP', KEYS[i])
    if not raw then
      break
    end
    taken[#taken + 1] = i
    taken[#taken + 1] = raw
    count = count + 1
  end
end
return taken
