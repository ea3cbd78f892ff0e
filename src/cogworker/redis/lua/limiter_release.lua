-- limiter_release: give back one slot of a concurrent limiter, and forget it in its
-- process's set of holds, in one step.
--
-- KEYS[1]  zset <ns>:limiter:<name>:concurrent   holder -> lease end (epoch ms)
-- KEYS[2]  set  <ns>:limiter_holds:<identity>     "<name>\n<holder>" of this process
-- ARGV[1]  the holder ("<identity>|<jid>|<token>")
-- ARGV[2]  its entry in the holds set ("<name>\n<holder>")
--
-- Returns  1 when the holder held a slot, 0 when it was gone (expired, reset, released).
-- luacheck: globals KEYS ARGV redis

local removed = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('SREM', KEYS[2], ARGV[2])
return removed
