-- Acknowledge settled jobs: drop each raw from the in-progress list and, only for a raw
-- that was still there, delete its job's orphan counter (the job got to finish).
--
-- A raw that is no longer on the list belongs to a run that was superseded: its process
-- was taken for dead (frozen, or holding the GIL past orphan_threshold) and the job was
-- recovered onto another process's list. Its late ack must leave the counter alone, or a
-- job that keeps its process from beating would be recovered forever, never reaching
-- max_orphanings.
--
-- KEYS[1]    this process's in-progress list
-- KEYS[i+1]  the orphan counter of the job of ARGV[i] (one per raw, in the same order)
-- ARGV[i]    the raw payload of a settled job
--
-- The counters of the jobs found are deleted by one DEL at the end (one command for the
-- batch, not one per job: most jobs were never orphaned and have none).
--
-- Returns how many raws were found on the list and removed.
-- luacheck: globals KEYS ARGV redis

local counters = {}
for i = 1, #ARGV do
  if redis.call('LREM', KEYS[1], 1, ARGV[i]) > 0 then
    counters[#counters + 1] = KEYS[i + 1]
  end
end
if #counters > 0 then
  redis.call('DEL', unpack(counters))
end
return #counters
