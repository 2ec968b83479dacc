-- claimkey.lua: lease key ARGV[10] itself, if it could be claimed now.
-- ARGV[8] PerHost, ARGV[9] the lease in µs, ARGV[11] how long to wait (µs)
-- when every slot is taken. Reply: {1, token, host state, next allowed,
-- lease left µs (-ID: held while member ID beats), closed until, revisit state} or {0, next - now µs}.
setPerHost(ARGV[8])
local lease = tonumber(ARGV[9])
sweep()
if memberDead() then -- the Store learns it from the tail, and rejoins
  return reply({0, tonumber(ARGV[11])})
end
local s = key(ARGV[10], nil, true)
if s.leased >= perHost then
  return reply({0, math.max(s.delay, tonumber(ARGV[11]))})
end
if s.na > clock then
  save(s)
  return reply({0, s.na - clock})
end
local token, left = grant(s, false, lease)
save(s)
return reply({1, token, s.st, s.na, left, s.cu, s.rv})
