-- beat.lua: a member's heartbeat, in the job's own slot (liveness.go).
-- KEYS[1] heed:{job}:live, hash: member id → "BEAT TIMEOUT HOLDS", its
-- last beat and its liveness timeout (µs, on the clock of the decisions)
-- and what it holds (JSON, for crawl status); KEYS[2] heed:{job}:dead,
-- hash: id → when it was declared dead, until its leases were taken back
-- in every shard. ARGV[1] the member's id, ARGV[2] what to do: 'join'
-- (a new member), 'beat', 'leave' (a Store that closes, its leases
-- ended) or 'forget' (ARGV[6..] were taken back everywhere), ARGV[3] its
-- timeout µs, ARGV[4] what it holds, ARGV[5] the caller's now µs, or 0
-- for Redis's clock (TIME).
-- Reply: {1 alive or 0 dead (the member must rejoin as a new one), now,
-- the dead ids whose leases are still to take back...}. A beat declares
-- dead every member whose last beat is older than its timeout.
local live, deadh, id, op = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local now = tonumber(ARGV[5])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
if op == 'leave' then
  redis.call('HDEL', live, id)
  return {1, now}
end
if op == 'forget' then
  if #ARGV >= 6 then redis.call('HDEL', deadh, unpack(ARGV, 6)) end
  return {1, now}
end
local alive = 1
local cur = redis.call('HGET', live, id)
if op == 'beat' then
  local beat, timeout = string.match(cur or '', '^(%d+) (%d+)')
  if not beat or redis.call('HEXISTS', deadh, id) == 1 then
    alive = 0
  elseif tonumber(beat) + tonumber(timeout) < now then
    alive = 0 -- too late: its leases are anyone's
    redis.call('HDEL', live, id)
    redis.call('HSET', deadh, id, now)
  end
end
if alive == 1 then
  redis.call('HSET', live, id, string.format('%d %d %s', now, tonumber(ARGV[3]), ARGV[4]))
end
local all = redis.call('HGETALL', live)
for i = 1, #all, 2 do
  local beat, timeout = string.match(all[i + 1], '^(%d+) (%d+)')
  if not beat or tonumber(beat) + tonumber(timeout) < now then
    redis.call('HDEL', live, all[i])
    redis.call('HSET', deadh, all[i], now)
  end
end
local r = {alive, now}
local d = redis.call('HKEYS', deadh)
for i = 1, #d do r[#r + 1] = d[i] end
return r
