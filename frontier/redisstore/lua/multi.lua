-- multi.lua: doneadding.lua for a page whose links fall in several
-- shards, in one call: only on a single Redis, which holds every shard (a
-- cluster's scripts each touch one slot). ARGV[1] and KEYS[1] are the
-- lease's shard; ARGV[8..21] are finish's arguments (a Done's); ARGV[22]
-- is G, the number of groups; ARGV[23..22+4G] four per group: its shard's
-- key prefix and counters hash, '1' if the Store has used the shard
-- before, and the number of its add arguments; add's arguments of each
-- group follow, in order, from ARGV[23+4G]. The first group is the lease's
-- shard. Reply: finish's code, then per group add's codes and the shard's
-- tail.
local g = tonumber(ARGV[22])
local at = 23 + 4 * g
local r = {}
for i = 1, g do
  local h = 23 + 4 * (i - 1)
  local n = tonumber(ARGV[h + 3])
  if i > 1 then
    enter(ARGV[h], ARGV[h + 1])
    join(ARGV[h + 2])
  end
  local codes = add(at, at + n - 1)
  if i == 1 then r[1] = finish() end
  for _, c in ipairs(codes) do r[#r + 1] = c end
  leave(r)
  at = at + n
end
return remember(r)
