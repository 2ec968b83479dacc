-- reclaim.lua: take back, in the shard, every lease of the dead members
-- ARGV[8..] (ids), at once (takeBack). Each member is marked dead in the
-- shard (x:ID of its counters hash), so that a claim of it that arrives
-- late grants nothing (memberDead); a mark is dropped a day after it was
-- made. The seen-only links each added whose reports its Store did not
-- hear written are queued to be reported (reportPending). Reply: {leases
-- taken back}.
local DEAD_TTL = 86400000000
local dead, marks = {}, {}
for i = 8, #ARGV do
  local id = tonumber(ARGV[i])
  if id and id > 0 then
    dead[id] = true
    marks[#marks + 1], marks[#marks + 2] = 'x:' .. ARGV[i], clock
  end
end
if #marks > 0 then redis.call('HSET', N, unpack(marks)) end
local n = 0
if #marks > 0 then
  n = takeBack(leasesOf(function(id) return dead[id] end))
end
-- Marks older than a day: no claim is that late.
local h = redis.call('HGETALL', N)
if #marks > 0 then reportPending(dead, h) end
local old = {}
for i = 1, #h, 2 do
  if string.sub(h[i], 1, 2) == 'x:' and tonumber(h[i + 1]) < clock - DEAD_TTL then old[#old + 1] = h[i] end
end
if #old > 0 then redis.call('HDEL', N, unpack(old)) end
return reply({n})
