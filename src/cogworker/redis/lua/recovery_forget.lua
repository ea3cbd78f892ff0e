-- Orphan recovery: forget a dead process whose in-progress list is empty (remove it from
-- the registry and drop its last beat stamp). A live process, or a list that is not empty,
-- is left alone, unless ARGV[4] is "1": the caller vouches for the death (a supervisor saw
-- the process exit), and only the list must be empty.
--
-- KEYS[1]  the process's in-progress list
-- KEYS[2]  its presence key (process:<identity>)
-- KEYS[3]  the last_beat hash
-- KEYS[4]  the in-progress registry set (inprogress_identities)
-- ARGV[1]  the identity
-- ARGV[2]  the dead-for threshold in seconds
-- ARGV[3]  the caller's clock (epoch seconds), used only when TIME is refused
-- ARGV[4]  "1" when the death is vouched for (no liveness check), else "0"
--
-- Returns 1 when forgotten, 0 when its list is not empty, -1 when it is alive.
-- luacheck: globals KEYS ARGV redis

if redis.replicate_commands then
  redis.replicate_commands()
end

local ok, t = pcall(redis.call, 'TIME')
local now = ok and (tonumber(t[1]) + tonumber(t[2]) / 1000000) or tonumber(ARGV[3])

if ARGV[4] ~= '1' then
  if redis.call('EXISTS', KEYS[2]) == 1 then
    return -1
  end
  local stamp = redis.pcall('HGET', KEYS[3], ARGV[1])
  local last = (type(stamp) ~= 'table') and tonumber(stamp) or nil
  if last and now - last <= tonumber(ARGV[2]) then
    return -1
  end
end

if redis.call('LLEN', KEYS[1]) > 0 then
  return 0
end
redis.call('SREM', KEYS[4], ARGV[1])
redis.pcall('HDEL', KEYS[3], ARGV[1])
return 1
