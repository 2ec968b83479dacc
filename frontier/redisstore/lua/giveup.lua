-- giveup.lua: give key ARGV[8] up; reply with its queued items.
local s = key(ARGV[8])
local items = redis.call('LRANGE', s.Q, 0, -1)
redis.call('DEL', s.Q)
if #items > 0 then redis.call('HINCRBY', N, 'queued', -#items) end
s.qlen, s.gu = 0, true
save(s, 'gu', 1)
return reply(items)
