-- Apply one event to a batch, then fire (push) every callback it makes due, in one step:
-- mode "register" adds members (and seals the batch when spec fields are given); mode
-- "settle" records one member's outcome. Idempotent per member: the member sets are sets
-- and each callback is guarded by its fired-flag (<kind>_at in the hash), so running the same
-- event twice (a job that ran twice, a retried call after a connection reset) pushes
-- nothing the second time.
--
-- KEYS[1]   the batch hash
-- KEYS[2]   members set (every member: jids, and batch:<bid> of child batches)
-- KEYS[3]   unrun set (members that have not run once yet)
-- KEYS[4]   pending set (members that have not succeeded yet)
-- KEYS[5]   failed set (members failing now: failed, not dead, not succeeded since)
-- KEYS[6]   dead set
-- KEYS[7]   ran set (members seen running once, also before they were registered)
-- KEYS[8]   ok set (members seen succeeding, also before they were registered)
-- KEYS[9]   the queue registry set (queues)
-- KEYS[10]  the callback queue's list
-- KEYS[11]  the batches index (sorted set, bid by creation time)
-- KEYS[12]  died set (members seen dead, also before they were registered)
-- ARGV[1]   mode: register | settle
-- ARGV[2]   the bid
-- ARGV[3]   now (epoch seconds)
-- ARGV[4]   ttl: seconds the batch's keys live once it completed
-- ARGV[5]   open ttl: seconds outcomes of a batch not sealed yet are kept
-- ARGV[6]   the wake-up pub/sub channel (a channel, not a key)
-- ARGV[7]   the callback queue's name
-- ARGV[8]   settle: the member; register: N, the number of hash field/value pairs that
--           follow (0: only add members; N > 0 seals the batch with them unless it is
--           sealed already)
-- ARGV[9]   settle: its outcome (success|failure|dead|death|cancelled); register: the
--           2N field/value strings, then the members to add
--
-- Returns {fired kinds joined by ",", finished kinds joined by ",", sealed 0/1,
--          cancelled 0/1, parent bid or "", parent callback queue or ""}.
-- luacheck: globals KEYS ARGV redis

local hash = KEYS[1]
local mode, bid, now, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local facts = {KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[12]}

local function add_member(member)
  redis.call('SADD', KEYS[2], member)
  local ran = redis.call('SISMEMBER', KEYS[7], member) == 1
  if not ran then redis.call('SADD', KEYS[3], member) end
  if redis.call('SISMEMBER', KEYS[8], member) == 1 then return end
  redis.call('SADD', KEYS[4], member)
  if redis.call('SISMEMBER', KEYS[12], member) == 1 then
    redis.call('SADD', KEYS[6], member)
  elseif ran then
    redis.call('SADD', KEYS[5], member)
  end
end

-- Facts (ran, ok, died) are kept for every member seen; the member sets change only for
-- registered members, so a job outside the batch (pushed, then its registration lost to
-- a crash) never moves a count or fires a callback.
local function settle(member, outcome)
  local is_member = redis.call('SISMEMBER', KEYS[2], member) == 1
  if outcome == 'success' then
    redis.call('SADD', KEYS[7], member)
    redis.call('SADD', KEYS[8], member)
    redis.call('SREM', KEYS[12], member)
    if is_member then
      for i = 3, 6 do redis.call('SREM', KEYS[i], member) end
    end
    return
  end
  if redis.call('SISMEMBER', KEYS[8], member) == 1 then return end
  if outcome ~= 'death' then
    redis.call('SADD', KEYS[7], member)
    if is_member then redis.call('SREM', KEYS[3], member) end
  end
  if outcome == 'dead' or outcome == 'death' then
    redis.call('SADD', KEYS[12], member)
    if is_member then
      redis.call('SREM', KEYS[5], member)
      redis.call('SADD', KEYS[6], member)
    end
  elseif outcome == 'failure' and is_member and
      redis.call('SISMEMBER', KEYS[6], member) == 0 then
    redis.call('SADD', KEYS[5], member)
  end
end

local function counts_json()
  local total = redis.call('SCARD', KEYS[2])
  local pending = redis.call('SCARD', KEYS[4])
  return string.format('{"total":%d,"pending":%d,"succeeded":%d,"failed":%d,"dead":%d}',
    total, pending, total - pending, redis.call('SCARD', KEYS[5]),
    redis.call('SCARD', KEYS[6]))
end

local function replace(text, placeholder, value)
  local at = string.find(text, placeholder, 1, true)
  if not at then return text end
  return string.sub(text, 1, at - 1) .. value .. string.sub(text, at + #placeholder)
end

local function deliver(kind)
  local template = redis.call('HGET', hash, 'cb:' .. kind)
  if not template then return end
  local extra = redis.call('HGET', hash, 'cbx:' .. kind) or ''
  if extra ~= '' then extra = ',' .. extra end
  local args = '[' .. cjson.encode(bid) .. ',' .. counts_json() .. extra .. ']'
  local raw = replace(replace(template, '"@@batch-args@@"', args), '"@@batch-now@@"', now)
  redis.call('SADD', KEYS[9], ARGV[7])
  redis.call('LPUSH', KEYS[10], raw)
  redis.pcall('PUBLISH', ARGV[6], ARGV[7])
end

local fired = {}

if mode == 'settle' then
  settle(ARGV[8], ARGV[9])
else
  local pairs_count = tonumber(ARGV[8])
  local first_member = 9 + 2 * pairs_count
  if pairs_count > 0 and redis.call('HEXISTS', hash, 'sealed') == 0 then
    redis.call('HSET', hash, unpack(ARGV, 9, first_member - 1))
    redis.call('HSET', hash, 'sealed', '1')
    redis.call('ZADD', KEYS[11], 'NX', redis.call('HGET', hash, 'created_at') or now, bid)
  end
  for i = first_member, #ARGV do add_member(ARGV[i]) end
end

local flags = redis.call('HMGET', hash, 'sealed', 'cancelled_at', 'death_at', 'complete_at',
                        'success_at', 'parent', 'parent_queue')
local sealed, cancelled = flags[1] ~= false, flags[2] ~= false
local done = {death = flags[3] ~= false, complete = flags[4] ~= false,
              success = flags[5] ~= false}
local function fire(kind)
  if not done[kind] then
    redis.call('HSET', hash, kind .. '_at', now)
    done[kind] = true
    fired[#fired + 1] = kind
    deliver(kind)
  end
end

if not sealed then
  for _, key in ipairs(facts) do redis.call('EXPIRE', key, ARGV[5]) end
elseif not cancelled then
  local was_complete = done.complete
  if not done.death and redis.call('SCARD', KEYS[6]) > 0 then fire('death') end
  if not done.complete and redis.call('SCARD', KEYS[3]) == 0 then fire('complete') end
  if not done.success and redis.call('SCARD', KEYS[4]) == 0 then fire('success') end
  if done.complete and (#fired > 0 or mode ~= 'settle') then
    redis.call('EXPIRE', hash, ttl)
    for _, key in ipairs(facts) do redis.call('EXPIRE', key, ttl) end
  elseif mode ~= 'settle' and not was_complete then
    for _, key in ipairs(facts) do redis.call('PERSIST', key) end
  end
end

local finished = {}
for _, kind in ipairs({'death', 'complete', 'success'}) do
  if done[kind] then finished[#finished + 1] = kind end
end
return {table.concat(fired, ','), table.concat(finished, ','), sealed and 1 or 0,
        cancelled and 1 or 0, flags[6] or '', flags[7] or ''}
