-- File a job whose failure could not be recorded the normal way: if this process still
-- holds the raw, ZADD the record into retry or dead, THEN drop the raw from the in-progress
-- list and delete its orphan counter (one atomic step, write first).
-- A full Redis (maxmemory, noeviction) lets the move through: the no-op LTRIM of the
-- in-progress list comes first, and Redis refuses a memory-growing command in a script
-- only while the script has written nothing (see held_claim.lua).
--
-- KEYS[1]  this process's in-progress list
-- KEYS[2]  the sorted set to file into (retry or dead)
-- KEYS[3]  the job's orphan counter
-- ARGV[1]  the raw payload as fetched
-- ARGV[2]  the score (epoch seconds)
-- ARGV[3]  the record to store (the payload with its failure fields)
--
-- Returns 1 when filed, 0 when the raw was no longer on the in-progress list.
-- luacheck: globals KEYS ARGV redis

if not redis.call('LPOS', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('LTRIM', KEYS[1], 0, -1)

redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
redis.call('LREM', KEYS[1], 1, ARGV[1])
redis.call('DEL', KEYS[3])
return 1
