-- claimone.lua: the function claimOne(name, lease), one step of a claim
-- on the ready key name, the first of the shard's ready set: it leases
-- the key's first item and returns {token, key, item, host state, next
-- allowed, lease left µs, given up, closed until, revisit state}, or
-- puts a key that cannot be claimed now back to its place (or out of the
-- ready set) and returns nil. A closed key (given up, or closed until
-- 'cu') is claimed whatever its next allowed time and its items' Due; one
-- whose 'cu' has passed opens again, to its place.
local function claimOne(name, lease)
  local s = key(name, nil, true)
  if s.qlen == 0 or s.leased >= perHost then
    save(s) -- not claimable: out of the ready set
  elseif not s.gu and s.cu > 0 and s.cu <= clock then
    s.cu = 0
    save(s) -- open again: to its place
  elseif s.na > clock and not closed(s) then
    save(s) -- resting since a restart: to its place
  else
    local item, due = take(s)
    if not item then
      save(s) -- its first item is not due: to its Due
      return nil
    end
    bump('queued', -1)
    local token = grant(s, item, lease, due)
    save(s)
    return {token, s.name, item, s.st, s.na, lease, s.gu and 1 or 0, s.cu, s.rv}
  end
  return nil
end
