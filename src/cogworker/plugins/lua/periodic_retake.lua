-- periodic_retake: make sure a cron job's running lock is held by that job.
--
-- Missing: take it for the job. Held by the job: refresh its TTL. Held by another jid (a
-- newer run): leave it alone.
--
-- KEYS[1]  the entry's running lock (periodic:running:<pjid>)
-- ARGV[1]  the job's jid
-- ARGV[2]  the TTL in whole seconds
--
-- Returns  1 when the job holds the lock afterwards, 0 when another jid holds it.
-- luacheck: globals KEYS ARGV redis

local owner = redis.call('GET', KEYS[1])
if not owner then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
if owner == ARGV[1] then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
