-- finish.lua: the function finish(), which ends lease ARGV[8] of key
-- ARGV[9]: Done, or Requeue when ARGV[10] is '1', putting item ARGV[11]
-- back at the front of the queue. The key takes host state ARGV[12] with
-- Delay ARGV[13] µs and rests ARGV[14] µs from now; ARGV[15] '1' stores
-- checkpoint ARGV[16] under name ARGV[17]; the key is closed for ARGV[18]
-- µs from now (0: open). A Done queues ARGV[19], unless it is '', again:
-- the revisit of the lease's item, due at ARGV[20] (see dueOf). The key
-- takes revisit state ARGV[21] ('rv') unless it is ''. It returns 0 done,
-- 1 lease lost. With o, its arguments are ARGV[o..o+13] instead
-- (batch.lua).
local function finish(o)
  local A = ARGV
  if o then
    A = {}
    for k = 8, 21 do A[k] = ARGV[o + k - 8] end
  end
  local token, name = A[8], A[9]
  local at, item = leaseOf(token, name)
  if not at then return 1 end
  if at <= clock then
    expire(token, name, item, at)
    return 1
  end
  local s = unlease(token, name)
  rest(s, tonumber(A[14]))
  if item and A[10] == '1' then
    front(s, A[11], s.ldue)
    bump('queued', 1)
  elseif item and A[19] ~= '' then
    queue(s, A[19], dueOf(A[20]))
    bump('queued', 1)
  end
  s.cu, s.delay = 0, tonumber(A[13])
  if tonumber(A[18]) > 0 then s.cu = clock + tonumber(A[18]) end
  if A[21] ~= '' then
    save(s, A[12], A[21])
  else
    save(s, A[12])
  end
  if A[15] == '1' then
    redis.call('SET', P .. 'cp:' .. A[17], A[16])
  end
  return 0
end
