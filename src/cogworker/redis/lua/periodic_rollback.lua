-- periodic_rollback: undo a won claim whose push failed, so the slot fires on a later tick.
--
-- The last slot is put back only while it still equals the rolled-back slot, so a later slot
-- claimed since is never undone. With no previous value it becomes slot - 1 rather than
-- disappearing (a missing key would let catch-up-off re-prime it to this very slot).
--
-- KEYS[1]  the entry's last claimed slot (periodic:last_slot:<pjid>)
-- KEYS[2]  the rolled-back slot's lock (periodic:lock:<pjid>:<slot>)
-- KEYS[3]  the entry's running lock (periodic:running:<pjid>)
-- ARGV[1]  the rolled-back slot (integer epoch seconds)
-- ARGV[2]  the last slot before the claim, or "" when there was none
-- ARGV[3]  the jid the claim was made for (the running lock is deleted only if it owns it)
--
-- Returns  1 when the last slot was put back, 0 when a later slot had been claimed since
--          (the locks of this claim are removed either way).
-- luacheck: globals KEYS ARGV redis

local restored = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  local previous = ARGV[2]
  if previous == '' then
    previous = tostring(tonumber(ARGV[1]) - 1)
  end
  redis.call('SET', KEYS[1], previous)
  restored = 1
end

redis.call('DEL', KEYS[2])
if redis.call('GET', KEYS[3]) == ARGV[3] then
  redis.call('DEL', KEYS[3])
end
return restored
