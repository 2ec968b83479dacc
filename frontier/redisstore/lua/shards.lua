-- shards.lua: for a script that goes from shard to shard and back, on
-- a single Redis, which holds every shard (batch.lua): the state of the shard entered (prelude.lua) is kept
-- per shard (stash, in the prelude's states), and made the shard entered
-- again (back).

local function stash(i)
  local v = states[i] or {}
  v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8] = P, N, R, E, LI, S, NV, cnt
  v[9], v[10], v[11], v[12], v[13], v[14], v[15] = dirty, epoch, epochAt, perHost, keep, pend, pendR
  states[i] = v -- in place: a batch stashes a shard after each group of links it adds
end

local function back(i)
  local v = states[i]
  P, N, R, E, LI, S, NV, cnt, dirty = v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]
  epoch, epochAt, perHost, keep, pend, pendR = v[10], v[11], v[12], v[13], v[14], v[15]
end

settle = function()
  for i in pairs(states) do
    back(i)
    flushLeases()
    flushReady()
    flush()
  end
end

-- enterAll enters the c shards of ARGV[h..h+3c-1], three values each: its
-- key prefix, its counters hash, '1' if the Store has used it before.
-- The first is the shard the prelude entered; f, if given, runs in each.
local function enterAll(h, c, f)
  for i = 1, c do
    local a = h + 3 * (i - 1)
    if i > 1 then
      enter(ARGV[a], ARGV[a + 1])
      join(ARGV[a + 2])
    end
    if f then f(i) end
    stash(i)
  end
end

-- leaveAll appends each of the c shards' tails to r, and writes their
-- counters back; the tail of a shard not in loud is quiet (prelude.lua,
-- tail).
local function leaveAll(c, r, loud)
  for i = 1, c do
    quietTail = not loud[i]
    back(i)
    leave(r)
  end
end
