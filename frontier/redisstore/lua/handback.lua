-- handback.lua: hand back, in the shard, the leases of the script's
-- member (ARGV[7]) granted before the shard's current epoch began that
-- its Store no longer holds — ARGV[8..] are the tokens (counters) it
-- still holds there. A restart or failover that began the epoch lost
-- their Dones, acknowledged before it: held while the member beats, they
-- would keep their keys (under PerHost 1, whole hosts) until the member
-- ends. Each goes back at once (takeBack): its page is fetched again.
-- A token granted in epoch E has a counter below (E+1)·2³² (join moves
-- the counter 2³² ahead with each epoch), as long as the shard granted
-- fewer than 2³² leases in all. Reply: {leases handed back}.
local kept = {}
for i = 8, #ARGV do kept[ARGV[i]] = true end
local n = 0
if member > 0 then
  local bound = epoch * 4294967296
  n = takeBack(leasesOf(function(id, token)
    return id == member and tonumber(token) < bound and not kept[token]
  end))
end
return reply({n})
