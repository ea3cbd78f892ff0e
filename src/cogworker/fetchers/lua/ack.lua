-- Acknowledge settled jobs: drop each raw from the in-progress list and delete the orphan
-- counters of those jobs (they got to finish).
--
-- KEYS[1]  this process's in-progress list
-- KEYS[2]  the orphan counter of the first job; one more counter key per job may follow
-- ARGV[1]  the raw payload of the first job; one more raw per job may follow
--
-- Returns how many raws were found on the list and removed.
-- luacheck: globals KEYS ARGV redis

local removed = 0
for i = 1, #ARGV do
  removed = removed + redis.call('LREM', KEYS[1], 1, ARGV[i])
end
if #KEYS > 1 then
  redis.call('DEL', unpack(KEYS, 2))  -- one command for every counter of the batch
end
return removed
