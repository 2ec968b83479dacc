-- finish.lua: the function finish(), which ends lease ARGV[8] of key
-- ARGV[9]: Done, or Requeue when ARGV[10] is '1', putting item ARGV[11]
-- back at the front of the queue. The key takes host state ARGV[12] with
-- Delay ARGV[13] µs and rests ARGV[14] µs from now; ARGV[15] '1' stores
-- checkpoint ARGV[16] under name ARGV[17]; the key is closed for ARGV[18]
-- µs from now (0: open). A Done queues ARGV[19], unless it is '', again:
-- the revisit of the lease's item, due at ARGV[20] (see dueOf). The key
-- takes revisit state ARGV[21] ('rv') unless it is ''. Of a run, ARGV[22]
-- items were handed out (the last is the one ended; the others were
-- done), and those after them go back to the front of the queue; the
-- revisits of the others, ARGV[23] (each behind its length, 4 bytes
-- big-endian), due at ARGV[24] (comma-separated), are queued first. It
-- returns 0 done, 1 lease lost. With o, its arguments are ARGV[o..o+16]
-- instead (batch.lua): what is named ARGV[k] above is ARGV[b + k].
local function finish(o)
  local b = o and o - 8 or 0
  local token, name = ARGV[b + 8], ARGV[b + 9]
  local at, item, run = leaseOf(token, name)
  if not at then return 1 end
  if at >= 0 and at <= clock then
    expire(token, name, item, at, run)
    return 1
  end
  local s = unlease(token, name)
  rest(s, tonumber(ARGV[b + 14]))
  if run then
    local h = math.min(math.max(tonumber(ARGV[b + 22]) or 1, 1), #run)
    frontRun(s, run, h + 1)
    bump('queued', 1 - h) -- handed out after the first: counted until now
    local more, dues, k, p = ARGV[b + 23], {}, 0, 1
    for d in string.gmatch(ARGV[b + 24] .. ',', '([^,]*),') do dues[#dues + 1] = d end
    while p + 3 <= #more do
      local l = struct.unpack('>I4', more, p)
      k = k + 1
      queue(s, string.sub(more, p + 4, p + 3 + l), dueOf(dues[k] or ''))
      bump('queued', 1)
      p = p + 4 + l
    end
  end
  if item and ARGV[b + 10] == '1' then
    front(s, ARGV[b + 11], s.ldue)
    bump('queued', 1)
  elseif item and ARGV[b + 19] ~= '' then
    queue(s, ARGV[b + 19], dueOf(ARGV[b + 20]))
    bump('queued', 1)
  end
  s.cu, s.delay = 0, tonumber(ARGV[b + 13])
  if tonumber(ARGV[b + 18]) > 0 then s.cu = clock + tonumber(ARGV[b + 18]) end
  if ARGV[b + 21] ~= '' then
    save(s, ARGV[b + 12], ARGV[b + 21])
  else
    save(s, ARGV[b + 12])
  end
  if ARGV[b + 15] == '1' then
    redis.call('SET', P .. 'cp:' .. ARGV[b + 17], ARGV[b + 16])
  end
  return 0
end
