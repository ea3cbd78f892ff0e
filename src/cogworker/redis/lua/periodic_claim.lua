-- periodic_claim: claim one cron slot of one entry, fleet-wide, in one atomic step.
--
-- A slot fires at most once: it must be later than the entry's last claimed slot (the
-- last-slot guard) and this call must create the slot's NX lock (which settles a race
-- between processes that read the same last slot). For until_executed entries the running
-- lock is written here, before the job exists, so a fast job can always release it.
--
-- KEYS[1]  the entry's running lock (periodic:running:<pjid>; value = owner jid)
-- KEYS[2]  the entry's last claimed slot (periodic:last_slot:<pjid>)
-- KEYS[3]  this slot's lock (periodic:lock:<pjid>:<slot>)
-- ARGV[1]  the slot (integer epoch seconds)
-- ARGV[2]  the unique mode: "until_executed" or ""
-- ARGV[3]  the slot lock's TTL in whole seconds
-- ARGV[4]  the jid the job will carry (owner of the running lock)
-- ARGV[5]  the running lock's TTL in whole seconds (queued TTL)
--
-- Returns  2 when blocked (an until_executed run still holds the running lock),
--          0 when lost (the slot is not later than the last slot, or another process won),
--          {1, previous last slot or ""} when won.
-- luacheck: globals KEYS ARGV redis

local until_executed = ARGV[2] == 'until_executed'
if until_executed and redis.call('EXISTS', KEYS[1]) == 1 then
  return 2
end

local slot = tonumber(ARGV[1])
local previous = redis.call('GET', KEYS[2])
local previous_number = tonumber(previous) or 0
if slot <= previous_number then
  return 0
end

if not redis.call('SET', KEYS[3], '1', 'NX', 'EX', ARGV[3]) then
  return 0
end

redis.call('SET', KEYS[2], ARGV[1])
if until_executed then
  redis.call('SET', KEYS[1], ARGV[4], 'EX', ARGV[5])
end
if previous and tonumber(previous) then
  return {1, previous}
end
return {1, ''}
