-- drop.lua: end the leases of a Store that closes, ARGV[8..], three
-- values each: its token, key and, of a run, how many of its items were
-- done: the others back at the front of their queues, each key resting a
-- full Delay from now.
local n = 0
for i = 8, #ARGV, 3 do
  local at, item, run = leaseOf(ARGV[i], ARGV[i + 1])
  if at then
    expire(ARGV[i], ARGV[i + 1], item, clock, run, tonumber(ARGV[i + 2]))
    n = n + 1
  end
end
return reply({n})
