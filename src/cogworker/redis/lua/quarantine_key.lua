-- Quarantine a key of the wrong Redis type (KeyGuard): if KEYS[1] still holds the type the
-- client saw, RENAME it to KEYS[2] and give the copy a TTL, so that everything goes on with
-- a fresh, empty key while the odd value is kept for a person to look at.
--
-- KEYS[1]  the key of the wrong type (e.g. a queue list that holds a string)
-- KEYS[2]  the quarantine name (<ns>:quarantine:<key>:<epoch ms>:<8 hex>)
-- ARGV[1]  the type the client saw (TYPE's reply, e.g. "string")
-- ARGV[2]  the copy's TTL in seconds
--
-- Returns 1 when moved, 0 when KEYS[1] no longer holds that type (someone fixed it).
-- luacheck: globals KEYS ARGV redis

if redis.call('TYPE', KEYS[1]).ok ~= ARGV[1] then
  return 0
end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
