-- giveup.lua: give key ARGV[8] up: its queued items stay, to be claimed
-- at once and reported. Reply: {how many are queued}.
local s = key(ARGV[8])
s.gu = true
save(s)
return reply({s.qlen})
