-- claimone.lua: the function claimOne(name, lease), one step of a claim
-- on the ready key name, the first of the shard's ready set: it leases
-- the key's first item and returns {token, key, item, host state, next
-- allowed, lease left µs (-ID for a lease held while member ID beats:
-- grant), given up, closed until, revisit state, run}, or
-- puts a key that cannot be claimed now back to its place (or out of the
-- ready set) and returns nil. A closed key (given up, or closed until
-- 'cu') is claimed whatever its next allowed time and its items' Due; one
-- whose 'cu' has passed opens again, to its place. A key that is open
-- and has one lease at most (PerHost 1) leases up to runMax of the items
-- queued due at once (a run), fewer if its Delay lets fewer be fetched in
-- the quarter lease the run's are handed out in: run is the items after
-- the first, each behind its length (4 bytes, big-endian); '' for a lease
-- of one.
local function claimOne(name, lease)
  local s = key(name, nil, true)
  if s.qlen == 0 or s.leased >= perHost then
    save(s) -- not claimable: out of the ready set
  elseif not s.gu and s.cu > 0 and s.cu <= clock then
    s.cu = 0
    save(s) -- open again: to its place
  elseif s.na > clock and not closed(s) then
    save(s) -- resting since a restart: to its place
  elseif runMax > 1 and s.llen > 1 and perHost == 1 and not closed(s) and #s.name < RUN
    and s.delay < lease / 4 then
    local n = runMax
    if s.delay > 0 then n = math.min(n, math.floor(lease / 4 / s.delay) + 1) end
    flushPush(s)
    local run = redis.call('LPOP', s.Q, math.min(n, s.llen))
    s.llen, s.qlen = s.llen - #run, s.qlen - #run
    bump('queued', -1) -- the others stay counted until the run ends
    local token, left = grant(s, run[1], lease, nil, run)
    save(s)
    local more = {}
    for i = 2, #run do
      more[#more + 1], more[#more + 2] = struct.pack('>I4', #run[i]), run[i]
    end
    return {token, s.name, run[1], s.st, s.na, left, 0, s.cu, s.rv, table.concat(more)}
  else
    local item, due = take(s)
    if not item then
      save(s) -- its first item is not due: to its Due
      return nil
    end
    bump('queued', -1)
    local token, left = grant(s, item, lease, due)
    save(s)
    return {token, s.name, item, s.st, s.na, left, s.gu and 1 or 0, s.cu, s.rv, ''}
  end
  return nil
end
