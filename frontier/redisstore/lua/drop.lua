-- drop.lua: end the leases of a Store that closes, ARGV[8..], two values
-- each: its token and key: items back at the front of their queues, each
-- key resting a full Delay from now.
local n = 0
for i = 8, #ARGV, 2 do
  local at, item = leaseOf(ARGV[i], ARGV[i + 1])
  if at then
    expire(ARGV[i], ARGV[i + 1], item, clock)
    n = n + 1
  end
end
return reply({n})
