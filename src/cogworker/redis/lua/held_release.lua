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
-- Returns how many raws were found on the list and removed.
-- luacheck: globals KEYS ARGV redis

local removed = 0
for i = 1, #ARGV do
  if redis.call('LREM', KEYS[1], 1, ARGV[i]) > 0 then
    removed = removed + 1
    redis.call('DEL', KEYS[i + 1])
  end
end
return removed
