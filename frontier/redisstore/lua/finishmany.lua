-- finishmany.lua: the Dones and Requeues of several leases in one call,
-- on a single Redis, which holds every shard. ARGV[8] is n, the number
-- of leases, ARGV[9] C, the number of their shards, ARGV[10..9+3C] three
-- per shard (see enterAll, shards.lua; the first is ARGV[1]'s shard,
-- KEYS[1]); then fifteen per lease: its shard (1-based) and finish's
-- arguments (finish.lua). Reply: finish's code per lease, then each
-- shard's tail.
local n, c = tonumber(ARGV[8]), tonumber(ARGV[9])
enterAll(10, c)
local r = {}
local at = 10 + 3 * c
for j = 1, n do
  back(tonumber(ARGV[at]))
  r[j] = finish(at + 1)
  at = at + 15
end
leaveAll(c, r)
return remember(r)
