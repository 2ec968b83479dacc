-- batch.lua: the calls of a Store that waited at once, on a single Redis,
-- which holds every shard (a cluster's scripts each touch one slot): the
-- leases that end (Done, Requeue: finish.lua), then the claims (up to
-- ARGV[10]), taken from the candidate shards in the order of their first
-- ready keys — the key that has waited longest among them first, as
-- claim.lua takes it in one shard (claimOne, claimone.lua). A key a lease
-- of the batch freed may go to a claim of the same batch, in its turn.
-- ARGV[8] PerHost (setClaim), ARGV[9] the lease in µs, ARGV[11] the bound (µs from
-- now, '' for none) and ARGV[12] its key's name: the first ready key of
-- the shards that are not candidates, which no key ready later is taken
-- ahead of. ARGV[13] is C, the number of shards, and ARGV[14..13+3C]
-- three per shard (see enterAll, shards.lua; the first is ARGV[1]'s,
-- KEYS[1]). Then the number of candidates and their shards (1-based);
-- then the number of leases to end (and Adds) and per lease: its shard,
-- finish's arguments (17), G, the number of groups of links to add (a
-- page's, by shard: the first the lease's, whose links are added before
-- the lease ends), two per group — its shard and the number of its add
-- arguments — and add's arguments of each group (add.lua); an Add is
-- shard 0, no finish arguments, then G and its groups alike (none: a
-- probe, run.go, which only enters its shard).
-- Reply: per lease ended, finish's code and add's codes of each group
-- (an Add's codes alone);
-- then the number of leases granted n,
-- then per lease its shard (1-based) and claimOne's ten values, then
-- each shard's tail.
local lease, want, c = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[13])
local bound = ARGV[11] ~= '' and clock + tonumber(ARGV[11])
local at = 14 + 3 * c
local cands, isCand = {}, {}
for j = 1, tonumber(ARGV[at]) do
  cands[j] = tonumber(ARGV[at + j])
  isCand[cands[j]] = true
end
at = at + #cands + 1
local ends = tonumber(ARGV[at])
at = at + 1

enterAll(14, c, function(i)
  if isCand[i] then
    setClaim(ARGV[8])
    sweep()
  end
end)
-- The links of the batch's pages, by shard: each shard's that are three
-- or more are tested against its seen-set at once (seenAhead; fewer cost
-- no more a SADD each).
do
  local byShard, p = {}, at
  for _ = 1, ends do
    local own = tonumber(ARGV[p])
    local gat = own > 0 and p + 18 or p + 1
    local g = tonumber(ARGV[gat])
    local gh = gat + 1
    p = gh + 2 * g
    for k = 1, g do
      local sh, n = tonumber(ARGV[gh + 2 * k - 2]), tonumber(ARGV[gh + 2 * k - 1])
      local l = byShard[sh] or {}
      byShard[sh] = l
      for i = p + 5, p + n - 1, 5 do l[#l + 1] = ARGV[i] end
      p = p + n
    end
  end
  for sh, l in pairs(byShard) do
    if #l >= 3 then
      back(sh)
      seenAhead(l)
    end
  end
end
local r = {}
for _ = 1, ends do
  -- An Add's shard is 0: no lease to end, no finish arguments.
  local own = tonumber(ARGV[at])
  local fa = at + 1
  local gat = own > 0 and at + 18 or at + 1
  local g = tonumber(ARGV[gat])
  local gh = gat + 1
  at = gh + 2 * g
  if g == 0 and own > 0 then
    back(own)
    r[#r + 1] = finish(fa)
  end
  for k = 1, g do
    local sh, n = tonumber(ARGV[gh + 2 * k - 2]), tonumber(ARGV[gh + 2 * k - 1])
    back(sh)
    local codes = add(at, at + n - 1)
    at = at + n
    if k == 1 and own > 0 then r[#r + 1] = finish(fa) end -- the lease's shard: its links, then its end
    stash(sh) -- add may have changed its settings (keep)
    for _, c in ipairs(codes) do r[#r + 1] = c end
  end
end

-- The first ready key of each candidate (heads). The first keys of its
-- ready set are read once, as many as the claims still to serve and one
-- (lists, from pos); the keys the batch's claims take or put back are in
-- pendR (flushReady), which the next head reads instead: a claim costs no
-- read of the set and no write to it.
local heads, lists, pos, full = {}, {}, {}, {}
local nat, n = #r + 1, 0 -- where the count of leases goes, and the count
local function read(i)
  flushReady()
  local k = math.min(want - n, 15) + 1
  lists[i], pos[i] = redis.call('ZRANGE', R, 0, k - 1, 'WITHSCORES'), 1
  full[i] = #lists[i] == 2 * k -- there may be more beyond
end
local function head(i)
  local best
  while true do
    local l = lists[i]
    while pos[i] <= #l and pendR[l[pos[i]]] ~= nil do pos[i] = pos[i] + 2 end
    if pos[i] <= #l then
      best = {l[pos[i]], tonumber(l[pos[i] + 1])}
      break
    end
    if not full[i] then break end
    read(i)
  end
  local f = firstPending()
  if f and (not best or f[2] < best[2] or f[2] == best[2] and f[1] < best[1]) then best = f end
  heads[i] = nil
  if best and best[2] <= clock then heads[i] = best end
end
r[nat] = 0
if want > 0 then
  for _, i in ipairs(cands) do
    back(i)
    if not memberDead() then -- else no claim there: the Store rejoins
      read(i)
      head(i)
    end
  end
end
for _ = 1, 100 + want do
  if n >= want then break end
  local best
  for _, i in ipairs(cands) do
    local t = heads[i]
    if t and (not best or t[2] < heads[best][2] or t[2] == heads[best][2] and t[1] < heads[best][1]) then best = i end
  end
  if not best then break end
  local t = heads[best]
  -- A closed key (at 0) goes ahead of any key ready later; between
  -- keys at the same score, names decide (a name the Store does not know,
  -- '?', refuses: the tail tells it).
  if bound and (t[2] > bound or t[2] == bound and t[1] > ARGV[12]) then break end
  back(best)
  local got = claimOne(t[1], lease)
  if got then
    n = n + 1
    r[#r + 1] = best
    for _, v in ipairs(got) do r[#r + 1] = v end
  end
  if n < want then head(best) end -- read only for a claim still to serve
end
r[nat] = n
-- A shard that is not a candidate tells its next event only where the
-- batch moved its ready or expiry set: the Store knows it otherwise.
leaveAll(c, r, isCand)
return remember(r)
