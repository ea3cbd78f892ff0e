-- Mark a workflow failed at one step, unless it already succeeded or failed.
--
-- KEYS[1]  the workflow's record (hash: state, steps, finished, failed_step, error,
--          result_jid)
-- ARGV[1]  the failed step (counted from 0)
-- ARGV[2]  the error (text)
-- ARGV[3]  milliseconds the record lives from now
--
-- Returns 1 when this call marked it failed, else 0.
-- luacheck: globals KEYS ARGV redis

local state = redis.call('HGET', KEYS[1], 'state')
if state == 'succeeded' or state == 'failed' then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'failed', 'failed_step', ARGV[1], 'error', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
