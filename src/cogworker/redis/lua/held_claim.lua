-- Reliable fetch from several queues in one round trip: skip the paused queues, then move
-- up to ARGV[1] jobs, each atomically, from the open queues (tried in the order given)
-- onto this process's in-progress list. A queue is drained before the next one is tried.
-- A batch from one queue costs three commands (LRANGE, LPUSH, LTRIM) instead of one LMOVE
-- per job; the in-progress list is written before the queue is trimmed, so an error in
-- between duplicates, never loses.
-- A full Redis (maxmemory reached, noeviction) still lets a fetch through: asked to
-- (ARGV[2] = 1), the script writes a no-op before its first LPUSH (LTRIM of the
-- in-progress list to all of itself). Redis refuses a memory-growing command in a script
-- only while the script has written nothing, so the move goes ahead; it frees as much
-- queue as it fills in progress, and running the queued jobs is what frees memory. The
-- caller asks for it only after a claim was refused (OOM): that refusal comes at the first
-- LPUSH, before anything was written, so the usual claim costs no extra command.
--
-- KEYS[1]      the paused-queues set
-- KEYS[2]      the first queue list to try; more queue lists follow, in the order to try
-- KEYS[#KEYS]  (last) this process's in-progress list
-- ARGV[1]      how many jobs to take at most (>= 1)
-- ARGV[2]      1: write the no-op first (a full Redis refused the claim), 0: don't
-- ARGV[3]      the name of the queue of KEYS[2]; one name per queue list, in KEYS order
--
-- Returns a flat list {n, i1, ..., in, queue_key, raw, queue_key, raw, ...}: n open (not
-- paused) queues, their positions among the queue lists (1-based), then the jobs in the
-- order they were taken. No jobs after the positions when every open queue is empty.
-- luacheck: globals KEYS ARGV redis

local paused = KEYS[1]
local inprogress = KEYS[#KEYS]
local wanted = tonumber(ARGV[1])
local open = {}
local taken = {}
local count = 0
local marked = ARGV[2] ~= '1'  -- the no-op write done, or not needed (see the header)

for i = 2, #KEYS - 1 do
  if redis.call('SISMEMBER', paused, ARGV[i + 1]) == 0 then
    open[#open + 1] = i - 1
    local want = wanted - count
    if want > 0 then
      -- the rightmost entries are the oldest: the last element is the next to run
      local items = redis.call('LRANGE', KEYS[i], -want, -1)
      if #items > 0 then
        local ordered = {}
        for j = #items, 1, -1 do
          ordered[#ordered + 1] = items[j]
          taken[#taken + 1] = KEYS[i]
          taken[#taken + 1] = items[j]
        end
        if not marked then
          redis.call('LTRIM', inprogress, 0, -1)
          marked = true
        end
        redis.call('LPUSH', inprogress, unpack(ordered))
        redis.call('LTRIM', KEYS[i], 0, -(#items + 1))
        count = count + #items
      end
    end
  end
end

local reply = {#open}
for _, position in ipairs(open) do
  reply[#reply + 1] = position
end
for _, value in ipairs(taken) do
  reply[#reply + 1] = value
end
return reply
