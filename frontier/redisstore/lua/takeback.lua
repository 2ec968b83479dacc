-- takeback.lua: after prelude.lua, for reclaim.lua and handback.lua.

-- leasesOf returns the tokens (numbers) of the shard's leases held while
-- a member beats for which want(member id, token string) is true.
local function leasesOf(want)
  local mine = {}
  if cnt.leased <= 0 then return mine end
  flushLeases()
  local all = redis.call('HGETALL', LI)
  for i = 1, #all, 2 do
    local v = all[i + 1]
    if #v >= 10 then
      local at = struct.unpack('>d', v)
      if at < 0 and want(-at, all[i]) then mine[#mine + 1] = tonumber(all[i]) end
    end
  end
  return mine
end

-- takeBack ends the leases tokens at once: each item back at the front
-- of its key's queue, in the order the items were queued (a key's leases
-- of PerHost above one in the order they were granted; a run's items in
-- order, none of them done as far as Redis knows), each key resting a
-- full Delay from now, since a request may have been under way. It
-- returns how many it ended.
local function takeBack(tokens)
  -- The latest grant first: each goes to the front of its key's queue,
  -- so that the earliest ends up first.
  table.sort(tokens, function(a, b) return a > b end)
  local n = 0
  for _, t in ipairs(tokens) do
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
  return n
end

-- reportPending (for reclaim.lua, after add.lua's refusedItem) queues, on
-- its key, each seen-only link that the dead members dead (id → true) added and whose reports their Stores
-- never heard written (pendingOf), at once, to be reported (refusedItem,
-- frontier.RefusedSeenOnly); h is the counters hash, as HGETALL read it.
-- It deletes their fields, and returns how many it queued.
local function reportPending(dead, h)
  local keys, order, gone = {}, {}, {}
  for i = 1, #h, 2 do
    local id = string.match(h[i], '^p:(%d+):')
    if id and dead[tonumber(id)] then
      local v = h[i + 1]
      local nl = string.find(v, '\n', 1, true)
      local name = string.sub(v, 1, nl - 1)
      local s = keys[name]
      if not s then
        s = key(name)
        keys[name], order[#order + 1] = s, s
      end
      queue(s, refusedItem(string.sub(v, nl + 1), 3))
      s.changed, gone[#gone + 1] = true, h[i]
    end
  end
  for _, s in ipairs(order) do save(s) end
  if #gone > 0 then
    bump('queued', #gone)
    redis.call('HDEL', N, unpack(gone))
  end
  return #gone
end
