-- claimmany.lua: claims for several callers at once, on a single Redis,
-- which holds every shard (a cluster's scripts each touch one slot): up to
-- ARGV[10] leases, taken from the candidate shards in the order of their
-- first ready keys — the key that has waited longest among them first,
-- as claim.lua takes it in one shard (claimOne, claimone.lua). ARGV[8]
-- PerHost, ARGV[9] the lease in µs, ARGV[11] the bound (µs from now, ''
-- for none) and ARGV[12] its key's name: the first ready key of the
-- shards that are not candidates, which no key ready later is taken
-- ahead of. ARGV[13] is C, the number of candidates, and ARGV[14..13+3C]
-- three per candidate: its key prefix, its counters hash, '1' if the
-- Store has used it before (see enterAll, shards.lua). The first is
-- ARGV[1]'s shard, KEYS[1].
-- Reply: the number of leases n, then per lease its candidate (1-based)
-- and claimOne's nine values, then each candidate's tail.
local lease, want, c = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[13])
local bound = ARGV[11] ~= '' and clock + tonumber(ARGV[11])
local heads = {}

local function head(i)
  local top = redis.call('ZRANGE', R, 0, 0, 'WITHSCORES')
  heads[i] = nil
  if #top > 0 and tonumber(top[2]) <= clock then heads[i] = {top[1], tonumber(top[2])} end
end

enterAll(14, c, function(i)
  setPerHost(ARGV[8])
  sweep()
  head(i)
end)
local r, n = {0}, 0
for _ = 1, 100 + want do
  if n >= want then break end
  local best
  for i = 1, c do
    local t = heads[i]
    if t and (not best or t[2] < heads[best][2] or t[2] == heads[best][2] and t[1] < heads[best][1]) then best = i end
  end
  if not best then break end
  local t = heads[best]
  if bound and t[2] > 0 and (t[2] > bound or t[2] == bound and t[1] > ARGV[12]) then break end
  back(best)
  local got = claimOne(t[1], lease)
  if got then
    n = n + 1
    r[#r + 1] = best
    for _, v in ipairs(got) do r[#r + 1] = v end
  end
  head(best)
  stash(best)
end
r[1] = n
leaveAll(c, r)
return remember(r)
