-- claim.lua: lease the first item of the key that has waited longest
-- among those ready now (claimOne, claimone.lua). ARGV[8] PerHost and
-- run (setClaim), ARGV[9] the lease in µs, ARGV[10] the bound (µs from
-- now, '' for none) and ARGV[11] its key's name: a key ready later is not
-- taken. Reply: {1, token, key, item, host state, next allowed, lease
-- left µs, given up, closed until, revisit state, run}, or {0, has next,
-- next - now µs, idle}.
setClaim(ARGV[8])
local lease = tonumber(ARGV[9])
sweep()
local bound = ARGV[10] ~= '' and clock + tonumber(ARGV[10])
for _ = 1, 100 do
  if memberDead() then break end -- the Store learns it from the tail
  flushReady()
  local top = redis.call('ZRANGE', R, 0, 0, 'WITHSCORES')
  if #top == 0 or tonumber(top[2]) > clock then break end
  local sc = tonumber(top[2])
  -- As batch.lua: names decide between keys at the same score.
  if bound and (sc > bound or sc == bound and top[1] > ARGV[11]) then break end
  local got = claimOne(top[1], lease)
  if got then
    table.insert(got, 1, 1)
    return reply(got)
  end
end
local nxt
flushReady()
local top = redis.call('ZRANGE', R, 0, 0, 'WITHSCORES')
if #top > 0 then nxt = tonumber(top[2]) end
if cnt.leased > 0 then
  flushLeases()
  local exp = redis.call('ZRANGE', E, 0, 0, 'WITHSCORES')
  if #exp > 0 and (not nxt or tonumber(exp[2]) < nxt) then nxt = tonumber(exp[2]) end
end
local idle = (cnt.queued <= 0 and cnt.leased <= 0) and 1 or 0
if nxt then
  return reply({0, 1, math.max(nxt - clock, 0), idle})
end
return reply({0, 0, 0, idle})
