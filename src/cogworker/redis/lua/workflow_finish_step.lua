-- Finish one workflow step exactly once: store its result and push the next step, in one
-- atomic step. The stored result is the step's flag: when it is already there (the step
-- finished before, then ran again after a crash before its ack) nothing is written and
-- nothing is pushed.
--
-- KEYS[1]  the step's result key (string, its JSON result)
-- KEYS[2]  the workflow's record (hash: state, steps, finished, failed_step, error,
--          result_jid)
-- KEYS[3]  the queue registry set (queues)
-- KEYS[4]  the next step's queue list (only when there is a next step)
-- ARGV[1]  the result (JSON text)
-- ARGV[2]  milliseconds the result and the record live from now
-- ARGV[3]  "1" when this step's result is the workflow's result; "g" for a member of a
--          group, whose workflow succeeds once all its steps finished; else "0"
-- ARGV[4]  the step's jid (the workflow's result jid when ARGV[3] is "1")
-- ARGV[5]  the next step's queue name (only with KEYS[4])
-- ARGV[6]  the wake-up pub/sub channel (a channel, not a key; only with KEYS[4])
-- ARGV[7]  the next step's raw payload (only with KEYS[4])
--
-- Returns 1 (finished: stored, next pushed), 0 (already finished: nothing done) or 2
-- (stored, but the workflow had failed: nothing pushed).
-- The wake-up PUBLISH is best-effort (pcall), as in push.lua.
-- luacheck: globals KEYS ARGV redis

if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
local state = redis.call('HGET', KEYS[2], 'state')
local finished = redis.call('HINCRBY', KEYS[2], 'finished', 1)
redis.call('PEXPIRE', KEYS[2], ARGV[2])
if state == 'failed' then
  return 2
end
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[2], 'state', 'succeeded', 'result_jid', ARGV[4])
elseif ARGV[3] == 'g' and finished >= tonumber(redis.call('HGET', KEYS[2], 'steps') or 0) then
  redis.call('HSET', KEYS[2], 'state', 'succeeded')
end
if #KEYS == 4 then
  redis.call('SADD', KEYS[3], ARGV[5])
  redis.call('LPUSH', KEYS[4], ARGV[7])
  redis.pcall('PUBLISH', ARGV[6], ARGV[5])
end
return 1
