-- drop.lua: end the leases ARGV[8..] of a Store that closes: items back at
-- the front of their queues, each key resting a full Delay from now.
local n = 0
for i = 8, #ARGV do
  if redis.call('HEXISTS', L, ARGV[i]) == 1 then
    expire(ARGV[i], clock)
    n = n + 1
  end
end
return reply({n})
