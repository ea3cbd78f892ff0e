-- Hand a failure this process could not file over to any live process: if the raw is still
-- held, RPUSH the {set, score, payload} record onto the unsettled list, THEN drop the raw
-- from the in-progress list. The job already ran: it is never requeued.
-- A full Redis (maxmemory, noeviction) lets the move through: the no-op LTRIM of the
-- in-progress list comes first, and Redis refuses a memory-growing command in a script
-- only while the script has written nothing (see held_claim.lua).
--
-- KEYS[1]  this process's in-progress list
-- KEYS[2]  the unsettled list
-- ARGV[1]  the raw payload as fetched
-- ARGV[2]  the record (JSON {set, score, payload})
--
-- Returns 1 when parked, 0 when the raw was no longer on the in-progress list.
-- luacheck: globals KEYS ARGV redis

if not redis.call('LPOS', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('LTRIM', KEYS[1], 0, -1)

redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('LREM', KEYS[1], 1, ARGV[1])
return 1
