-- claim.lua: lease the first item of the key that has waited longest
-- among those ready now. ARGV[8] PerHost, ARGV[9] the lease in µs.
-- A closed key (given up, or closed until 'cu') is claimed whatever its
-- next allowed time and its items' Due; one whose 'cu' has passed opens
-- again, to its place.
-- Reply: {1, token, key, item, host state, next allowed, lease left µs,
-- given up, closed until, revisit state}, or {0, has next, next - now µs,
-- idle}.
setPerHost(ARGV[8])
local lease = tonumber(ARGV[9])
sweep()
local bound = ARGV[10] ~= '' and clock + tonumber(ARGV[10])
for _ = 1, 100 do
  local top = redis.call('ZRANGE', R, 0, 0, 'WITHSCORES')
  if #top == 0 or tonumber(top[2]) > clock then break end
  local sc = tonumber(top[2])
  if bound and sc > 0 and (sc > bound or sc == bound and top[1] > ARGV[11]) then break end
  local s = key(top[1])
  if s.qlen == 0 or s.leased >= perHost then
    redis.call('ZREM', R, s.name) -- not claimable: should not have been there
  elseif not s.gu and s.cu > 0 and s.cu <= clock then
    s.cu = 0
    save(s, 'cu', 0) -- open again: to its place
  elseif s.na > clock and not closed(s) then
    save(s) -- resting since a restart: to its place
  else
    local item, due = take(s)
    if not item then
      save(s) -- its first item is not due: to its Due
    else
      bump('queued', -1)
      local token = grant(s, item, lease, due)
      save(s)
      local st = redis.call('HMGET', s.K, 'st', 'rv')
      return reply({1, token, s.name, item, st[1] or '', s.na, lease,
        s.gu and 1 or 0, s.cu, st[2] or ''})
    end
  end
end
local nxt
local top = redis.call('ZRANGE', R, 0, 0, 'WITHSCORES')
if #top > 0 then nxt = tonumber(top[2]) end
if cnt.leased > 0 then
  local exp = redis.call('ZRANGE', E, 0, 0, 'WITHSCORES')
  if #exp > 0 and (not nxt or tonumber(exp[2]) < nxt) then nxt = tonumber(exp[2]) end
end
local idle = (cnt.queued <= 0 and cnt.leased <= 0) and 1 or 0
if nxt then
  return reply({0, 1, math.max(nxt - clock, 0), idle})
end
return reply({0, 0, 0, idle})
