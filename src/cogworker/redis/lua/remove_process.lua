-- remove_process: a process's clean shutdown; forget its presence, its in-flight work and
-- its registry entries. Its in-progress registry entry and last beat stay while its
-- in-progress list still holds jobs (orphan recovery needs both to find them).
--
-- KEYS[1]  the presence hash (<ns>:process:<identity>)
-- KEYS[2]  the workers hash (<ns>:workers:<identity>)
-- KEYS[3]  the process set (<ns>:processes)
-- KEYS[4]  the in-progress list (<ns>:inprogress:<identity>)
-- KEYS[5]  the in-progress identities set (<ns>:inprogress_identities)
-- KEYS[6]  the last-beat hash (<ns>:last_beat)
-- ARGV[1]  the identity
-- Returns  1 when the identity was also removed from KEYS[5] and KEYS[6], else 0.
--
-- Every step is independent (pcall): a key of the wrong type does not stop the others.
-- luacheck: globals KEYS ARGV redis

redis.pcall('DEL', KEYS[1], KEYS[2])
redis.pcall('SREM', KEYS[3], ARGV[1])
local held = redis.pcall('LLEN', KEYS[4])
if held ~= 0 then
  return 0
end
redis.pcall('SREM', KEYS[5], ARGV[1])
redis.pcall('HDEL', KEYS[6], ARGV[1])
return 1
