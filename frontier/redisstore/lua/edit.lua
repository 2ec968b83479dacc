-- edit.lua: the write of EditQueued: the edited items of key ARGV[8],
-- from ARGV[9], four per item: the sequence number of its member of D as
-- read (8 bytes; '' for an item read in Q), its encoding as read, its new
-- encoding, and its new Due (see dueOf; '' for at once, '=' unchanged: it
-- keeps its place). An item is stored only if it is still queued exactly
-- as read (compare-and-set on its member): one claimed, ended, moved from
-- D to Q or changed meanwhile is left as the other call left it. An item
-- whose Due moved goes after those of its new Due queued before, as a new
-- arrival: a new sequence number in D; in Q, where items are in arrival
-- order, it stays in place while it is due by now, else it leaves Q for D.
-- Reply: {how many items were stored}.
local s = key(ARGV[8])
local n, dTouched = 0, false
for i = 9, #ARGV, 4 do
  local seq, old, new, due = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  if seq ~= '' then
    local at = redis.call('ZSCORE', s.D, seq .. old)
    if at then
      redis.call('ZREM', s.D, seq .. old)
      if due ~= '=' then
        at = dueOf(due) or clock
        s.dseq = s.dseq + 1
        seq = struct.pack('>I8', s.dseq)
      end
      redis.call('ZADD', s.D, at, seq .. new)
      n, dTouched = n + 1, true
    end
  else
    flushPush(s)
    local pos = redis.call('LPOS', s.Q, old)
    if pos then
      local at = due ~= '=' and dueOf(due)
      if at and at > clock then
        redis.call('LREM', s.Q, 1, old)
        s.llen, s.qlen = s.llen - 1, s.qlen - 1
        toD(s, new, at)
        dTouched = true
      else
        redis.call('LSET', s.Q, pos, new)
      end
      n = n + 1
    end
  end
end
if n > 0 then
  -- D's first item may have changed either way: read it again, and let
  -- save place the key in the ready set by its first item's new Due.
  if dTouched then dChanged(s, 0) end
  s.moved = true
  save(s)
end
return reply({n})
