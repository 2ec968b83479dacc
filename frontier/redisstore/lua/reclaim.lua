-- reclaim.lua: take back, in the shard, every lease of the dead members
-- ARGV[8..] (ids), at once: each item back at the front of its key's
-- queue, in the order the items were queued (a key's leases of PerHost
-- above one in the order they were granted; a run's items in order, none
-- of them done as far as Redis knows), each key resting a full Delay from
-- now, since a request may have been under way. Each member is marked
-- dead in the shard (x:ID of its counters hash), so that a claim of it
-- that arrives late grants nothing (memberDead); a mark is dropped a day
-- after it was made. Reply: {leases taken back}.
local DEAD_TTL = 86400000000
local dead, marks = {}, {}
for i = 8, #ARGV do
  local id = tonumber(ARGV[i])
  if id and id > 0 then
    dead[-id] = true
    marks[#marks + 1], marks[#marks + 2] = 'x:' .. ARGV[i], clock
  end
end
if #marks > 0 then redis.call('HSET', N, unpack(marks)) end
local n = 0
if cnt.leased > 0 and #marks > 0 then
  flushLeases()
  local all, mine = redis.call('HGETALL', LI), {}
  for i = 1, #all, 2 do
    local v = all[i + 1]
    if #v >= 10 and dead[struct.unpack('>d', v)] then mine[#mine + 1] = tonumber(all[i]) end
  end
  -- The latest grant first: each goes to the front of its key's queue,
  -- so that the earliest ends up first.
  table.sort(mine, function(a, b) return a > b end)
  for _, t in ipairs(mine) do
    local token = string.format('%d', t)
    local v = redis.call('HGET', LI, token)
    local _, l = struct.unpack('>dH', v)
    if l >= RUN then l = l - RUN end
    local name = string.sub(v, 11, 10 + l)
    local at, item, run = leaseOf(token, name)
    if at then
      expire(token, name, item, clock, run)
      n = n + 1
    end
  end
end
-- Marks older than a day: no claim is that late.
local h = redis.call('HGETALL', N)
local old = {}
for i = 1, #h, 2 do
  if string.sub(h[i], 1, 2) == 'x:' and tonumber(h[i + 1]) < clock - DEAD_TTL then old[#old + 1] = h[i] end
end
if #old > 0 then redis.call('HDEL', N, unpack(old)) end
return reply({n})
