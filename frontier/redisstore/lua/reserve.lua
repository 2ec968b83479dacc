-- reserve.lua: reserve up to ARGV[2] pages of the job's MaxPages ARGV[1]
-- (negative ARGV[2]: give -ARGV[2] back). KEYS[1] the job's hash; its
-- 'reserved' counts the pages reserved, started at ARGV[3] (the pages the
-- shards scheduled before any limit was asked for). Reply: pages granted.
local r = tonumber(redis.call('HGET', KEYS[1], 'reserved') or ARGV[3])
local want = tonumber(ARGV[2])
local grant = want
if want > 0 then grant = math.max(0, math.min(want, tonumber(ARGV[1]) - r)) end
redis.call('HSET', KEYS[1], 'reserved', math.max(r + grant, 0))
return grant
