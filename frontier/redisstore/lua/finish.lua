-- finish.lua: the function finish(), which ends lease ARGV[8] of key
-- ARGV[9]: Done, or Requeue when ARGV[10] is '1', putting item ARGV[11]
-- back at the front of the queue. The key takes host state ARGV[12] with
-- Delay ARGV[13] µs and rests ARGV[14] µs from now; ARGV[15] '1' stores
-- checkpoint ARGV[16] under name ARGV[17]; the key is closed for ARGV[18]
-- µs from now (0: open). A Done queues ARGV[19], unless it is '', again:
-- the revisit of the lease's item, due at ARGV[20] (see dueOf). The key
-- takes revisit state ARGV[21] ('rv') unless it is ''. It returns 0 done,
-- 1 lease lost.
local function finish()
  local token, name = ARGV[8], ARGV[9]
  if redis.call('HGET', L, token) ~= name then
    return 1
  end
  local at = redis.call('ZSCORE', E, token)
  if at and tonumber(at) <= clock then
    expire(token, tonumber(at))
    return 1
  end
  local item = unlease(token)
  local s = leaseOf(name, token)
  rest(s, tonumber(ARGV[14]))
  if item and ARGV[10] == '1' then
    front(s, ARGV[11], s.ldue)
    bump('queued', 1)
  elseif item and ARGV[19] ~= '' then
    queue(s, ARGV[19], dueOf(ARGV[20]))
    bump('queued', 1)
  end
  s.cu = 0
  if tonumber(ARGV[18]) > 0 then s.cu = clock + tonumber(ARGV[18]) end
  if ARGV[21] ~= '' then
    save(s, 'st', ARGV[12], 'delay', ARGV[13], 'cu', s.cu, 'rv', ARGV[21])
  else
    save(s, 'st', ARGV[12], 'delay', ARGV[13], 'cu', s.cu)
  end
  if ARGV[15] == '1' then
    redis.call('SET', P .. 'cp:' .. ARGV[17], ARGV[16])
  end
  return 0
end
