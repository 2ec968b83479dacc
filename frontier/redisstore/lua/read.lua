-- read.lua: read-only. KEYS[1] the job's counters hash; ARGV[1] the key
-- prefix, ARGV[2] 'counts', 'host', 'queued' or 'due', ARGV[3] the
-- caller's now in µs, ARGV[4] '1' to use it instead of TIME, ARGV[5] the
-- key for 'host' and 'queued'; for 'due' the edges (µs from now, comma
-- separated) and ARGV[6] how many keys of the ready set to read.
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
-- queuedOf returns the lengths of key name's two queues — items due
-- when queued (Q), items due later (D) — and D's first Due, from its state.
local function queuedOf(name)
  local v = redis.call('HMGET', P .. 'k:' .. name, 's', 'c', 'ql', 'dn', 'dh')
  if v[1] and v[2] then
    local _, _, _, _, _, _, _, _, ql, _, dh, _, dn = keyUnpack(v[1], v[2])
    return ql, dn, dh
  end
  return tonumber(v[3]) or redis.call('LLEN', P .. 'q:' .. name), tonumber(v[4]) or 0, tonumber(v[5]) or 0
end
if ARGV[2] == 'queued' then
  local ql, dn = queuedOf(ARGV[5])
  return ql + dn
end
if ARGV[2] == 'due' then
  -- The keys of the ready set waited on longest first: each one's Q
  -- items are due (they were when queued), its D items counted by Due.
  -- Returns the keys read, the oldest first item's key, Due (a Q item's:
  -- since when its key has waited) and item, the clock, then the counts.
  local edges = {}
  for e in string.gmatch(ARGV[5], '[^,]+') do edges[#edges + 1] = tonumber(e) end
  local counts = {}
  for i = 1, #edges + 2 do counts[i] = 0 end
  local keys = redis.call('ZRANGE', P .. 'ready', 0, tonumber(ARGV[6]) - 1, 'WITHSCORES')
  local oldest, oldestAt, oldestItem = '', clock, ''
  for i = 1, #keys, 2 do
    local name, score = keys[i], tonumber(keys[i + 1])
    local ql, dn, dh = queuedOf(name)
    counts[1] = counts[1] + ql
    if ql > 0 and score < oldestAt then
      oldest, oldestAt, oldestItem = name, score, redis.call('LINDEX', P .. 'q:' .. name, 0) or ''
    elseif ql == 0 and dn > 0 and dh < oldestAt then
      local first = redis.call('ZRANGE', P .. 'd:' .. name, 0, 0)[1]
      oldest, oldestAt, oldestItem = name, dh, first and string.sub(first, 9) or ''
    end
    if dn > 0 then
      local D, below = P .. 'd:' .. name, 0
      for j = 0, #edges do
        local upTo = clock + (j > 0 and edges[j] or 0)
        local n = redis.call('ZCOUNT', D, '-inf', string.format('%d', upTo))
        counts[j + 1] = counts[j + 1] + n - below
        below = n
      end
      counts[#edges + 2] = counts[#edges + 2] + dn - below
    end
  end
  local out = {#keys / 2, oldest, string.format('%d', oldestAt), oldestItem, string.format('%d', clock)}
  for i = 1, #counts do out[#out + 1] = counts[i] end
  return out
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
