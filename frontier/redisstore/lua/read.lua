-- read.lua: read-only. KEYS[1] the job's counters hash; ARGV[1] the key
-- prefix, ARGV[2] 'counts' or 'host', ARGV[3] the caller's now in µs,
-- ARGV[4] '1' to use it instead of TIME, ARGV[5] the key for 'host'.
local P, N = ARGV[1], KEYS[1]
local clock
if ARGV[4] == '1' and (tonumber(ARGV[3]) or 0) ~= 0 then
  clock = tonumber(ARGV[3])
else
  local t = redis.call('TIME')
  clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
if ARGV[2] == 'counts' then
  local c = redis.call('HMGET', N, 'queued', 'leased', 'hosts', 'busy', 'scheduled')
  for i = 1, 5 do c[i] = tonumber(c[i]) or 0 end
  local R = P .. 'ready'
  c[6] = redis.call('ZCOUNT', R, '-inf', string.format('%d', clock))
  c[7] = redis.call('ZCOUNT', R, string.format('(%d', clock), '+inf')
  return c
end
local v = redis.call('HMGET', P .. 'k:' .. ARGV[5], 'na', 'delay', 'ep', 'st', 'cu', 's', 'c')
if v[6] and v[7] then -- keystate.lua; else a key saved by an earlier layout
  local na, _, _, _, _, delay, _, ep, _, cu = keyUnpack(v[6], v[7])
  v = {na, delay, ep, v[4], cu}
end
local na = tonumber(v[1]) or 0
local e = redis.call('HMGET', N, 'epoch', 'epochat', 'runid')
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or '?'
if e[3] and e[3] ~= run then
  -- Restarted, and no script of the shard ran since: the key rests a
  -- full Delay from now, as the next script will make it.
  na = math.max(na, clock + (tonumber(v[2]) or 0))
elseif (tonumber(v[3]) or 0) < (tonumber(e[1]) or 0) then
  na = math.max(na, (tonumber(e[2]) or 0) + (tonumber(v[2]) or 0))
end
return {na, v[4] or '', tonumber(v[5]) or 0}
