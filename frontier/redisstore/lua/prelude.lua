-- prelude.lua: shared by every script that changes the job's state, after
-- bucket.lua, the arithmetic of each key's token bucket.
--
-- KEYS[1] is the shard's counters hash (it names the shard's slot); every
-- key a script touches is in that slot. ARGV:
--   1 the shard's key prefix, heed:{job/SHARD}: (heed:{job}: for a job of
--     an earlier release, one shard)
--   2 the Store's memo hash ('' for none), 3 this request's id, behind
--     a '+' if it may have run already (a retry: its memo is looked up),
--   4 ids, comma-separated, of requests whose replies arrived (forgotten),
--     behind a '!' if the memo's expiry is to move later (the Store does
--     not move it at every request),
--   5 the caller's now in µs, 6 '1' to decide on it instead of TIME ('0'
--     if not), followed by 'w' if the script tells the job's wake index of
--     a shard that woke itself (on a single Redis, which holds the job's
--     slot too: no round trip more),
--   7 '1' if the Store has used the job before (it must exist), then
--     ':ID' when the Store is a member of the job (liveness.go): the
--     leases its claims grant last while member ID beats, and none is
--     granted once ID is marked dead in the shard (x:ID, reclaim.lua).
-- Scripts' own arguments start at ARGV[8]. The functions work on the
-- shard enter last entered: ARGV[1]'s, unless a script (batch.lua, on a
-- single Redis) enters others.
-- How long an idle key's pacing state outlives its rest (ms), and a memo.
local IDLE_TTL, MEMO_TTL = 60000, 600000
-- The layout of a shard's keys this release writes (the counters hash's
-- field lv): a lease is its record in the item hash (token → expiry, key
-- and item: leaseRecord) and its member of the expiry set, 'TOKEN KEY',
-- for the sweeps; the fencing counter is in the counters hash
-- (token). A shard of an earlier layout (a lease hash, token → key, and
-- the expiry set of tokens; the counter in a key of its own) is moved to
-- it once (migrate). A key's state is packed (keystate.lua).
local LAYOUT = '2'
-- Every value below that a call sets is set again by begin, at the
-- start of each call: a script loaded as a function (Redis Functions)
-- keeps its upvalues from call to call.
local callerClock, wakeHere
-- The member whose claims this script serves, 0 for none: a lease then
-- expires a lease after it was granted, as before members existed.
-- quietTail: a batch (batch.lua) reads the next event of a shard it
-- claims nothing of only where it moved the ready or expiry set (tail).
local quietTail = false
local memberID, member

local function num(v)
  if v then return tonumber(v) or 0 end
  return 0
end

-- The shard's keys, its counters hash's values (NV, read once: its
-- counters are kept in cnt and written back once, by flush, with the
-- fields of dirty), the clock, and Redis's run_id and TIME, read once a
-- script.
local P, N, R, E, LI, S, NV, cnt, dirty, clock, runID, redisNow
-- The lease records the script wrote to the shard, and its keys' new
-- places in the ready set, not yet in Redis (see flushLeases, flushReady;
-- pend.first is the first of those places: firstPending).
local pend, pendR
-- The shard's settings and epoch, which join loads; and runMax, the
-- items a claim of this script may lease at once (a run: setClaim).
local epoch, epochAt, perHost, keep = 0, 0, 1, false
local runMax = 1
-- The state of each shard a batch entered, by its place in the batch
-- (shards.lua: stash, back).
local states = {}

-- pendingOf is the prefix, in the counters hash, of the fields of the
-- seen-only links member id (a string) added new whose reports its Store
-- has not heard written (add.lua): field prefix and seen-set member →
-- key, '\n' and the encoded item, for reclaim.lua to queue them to be
-- reported if the member dies (reportPending).
local function pendingOf(id)
  return 'p:' .. id .. ':'
end

-- bump adds d to counter f.
local function bump(f, d)
  cnt[f], dirty[f] = cnt[f] + d, true
end

-- enter makes the functions work on the shard of key prefix p, whose
-- counters hash is n.
local function enter(p, n)
  P, N = p, n
  R, E, LI, S = P .. 'ready', P .. 'exp', P .. 'item', P .. 'seen'
  pend = {add = {}, del = {}, gone = {}, li = {}, lidel = {}, item = {}, first = false, seen = {}, known = false}
  pendR = {}
  NV = redis.call('HMGET', N, 'lastnow', 'runid', 'epoch', 'epochat', 'perhost', 'keep', 'pub', 'pv',
    'queued', 'leased', 'hosts', 'busy', 'scheduled', 'seen', 'token', 'lv', 'x:' .. memberID)
  cnt = {queued = num(NV[9]), leased = num(NV[10]), hosts = num(NV[11]), busy = num(NV[12]),
    scheduled = num(NV[13]), token = num(NV[15])}
  dirty = {}
  -- The one clock of every decision: Redis's, unless the Store decides on
  -- its caller's; then an operation without a now (Add, GiveUp) takes the
  -- latest now a caller gave.
  if not callerClock then
    if not redisNow then
      local t = redis.call('TIME')
      redisNow = tonumber(t[1]) * 1000000 + tonumber(t[2])
    end
    clock = redisNow
  else
    local last = num(NV[1])
    clock = num(ARGV[5])
    if clock == 0 then
      clock = last
    elseif clock > last then
      cnt.lastnow, dirty.lastnow = clock, true
    end
  end
end

-- A request retried after its reply was lost gets the reply it had: a
-- script is applied once however often it is sent.
local memo, reqID, retried

-- flushLeases writes the lease records the script granted and ended in
-- the shard since it last read the expiry set: a batch grants and ends
-- many leases, and writes them in four commands instead of two a lease.
-- Whatever reads the expiry set calls it first; the item hash is read
-- through pend (leaseOf).
local function flushLeases()
  if #pend.add + #pend.del > 0 then pend.moved = true end
  if #pend.add > 0 then redis.call('ZADD', E, unpack(pend.add)) end
  if #pend.del > 0 then redis.call('ZREM', E, unpack(pend.del)) end
  if #pend.li > 0 then redis.call('HSET', LI, unpack(pend.li)) end
  if #pend.lidel > 0 then redis.call('HDEL', LI, unpack(pend.lidel)) end
  if #pend.add + #pend.del + #pend.li + #pend.lidel > 0 then
    -- In place: a batch keeps each shard's pend (shards.lua, stash).
    pend.add, pend.del, pend.gone, pend.li, pend.lidel, pend.item = {}, {}, {}, {}, {}, {}
  end
end

-- flushReady writes the places in the ready set that the script's saves
-- gave keys since it last read the set: the Dones of a batch and the links
-- of their pages put many keys back, in one ZADD (and one ZREM) instead of
-- one each. Whatever reads the ready set calls it first.
local function flushReady()
  if next(pendR) == nil then return end
  pend.moved = true
  local add, del = {}, {}
  for name, at in pairs(pendR) do
    if at then
      add[#add + 1], add[#add + 2] = at, name
    else
      del[#del + 1] = name
    end
  end
  if #add > 0 then redis.call('ZADD', R, unpack(add)) end
  if #del > 0 then redis.call('ZREM', R, unpack(del)) end
  for k in pairs(pendR) do pendR[k] = nil end -- in place, as flushLeases
  pend.first = false
end

-- setPending gives key name the place at in the ready set (false: out of
-- it), to be written by flushReady, and keeps pend.first: the first place
-- pending, {name, score}, false for none, nil when not known.
local function setPending(name, at)
  pendR[name] = at
  local f = pend.first
  if f == nil then return end
  if f and f[1] == name then
    pend.first = nil
  elseif at and (not f or at < f[2] or at == f[2] and name < f[1]) then
    pend.first = {name, at}
  end
end

-- firstPending returns the first place pending, {name, score}, or nil: a
-- batch's claims ask for it once each, and pendR holds a place for every
-- key the batch ended a lease of or claimed.
local function firstPending()
  if pend.first == nil then
    local best = false
    for name, at in pairs(pendR) do
      if at and (not best or at < best[2] or at == best[2] and name < best[1]) then best = {name, at} end
    end
    pend.first = best
  end
  return pend.first or nil
end

-- unpend removes from list, of pairs, the pair whose first value (second,
-- with second) is v.
local function unpend(list, v, second)
  for i = 1, #list, 2 do
    if list[i + (second and 1 or 0)] == v then
      table.remove(list, i)
      table.remove(list, i)
      return
    end
  end
end

-- memberDead reports whether the member of the script's claims was
-- declared dead and its leases taken back in the shard entered: it may
-- claim nothing more there (a process that was paused past its liveness
-- timeout must rejoin as a new member).
local function memberDead()
  return member > 0 and NV[17] ~= false
end

-- tail returns what the Store keeps of the shard (shard.go): whether it
-- has a next event, its score and the ready key's name (when the first
-- ready key may be claimed, or since when it has waited, or the first
-- lease expiry), the shard's publication number if the Store must tell
-- the job's wake index, else 0, the clock, how many keys are ready
-- now, up to 8 (a Store sends no more claims at once to a shard than it
-- has ready keys: the others would find nothing), and the shard's epoch
-- (a Store that sees it change forgets the URLs it knew seen: Redis may
-- have lost some), and the member of the script's claims if it is dead
-- in the shard (memberDead), else 0. The shard publishes when its
-- next event comes earlier than it last published (pub) — it woke — and
-- moves pub later, silently, when it is not ready now: a Store that
-- cached a later time than the truth has always been told since.
local function tail()
  flushLeases()
  flushReady()
  if quietTail and not pend.moved then
    -- Neither the ready set nor the expiry set moved: the Store keeps
    -- what it knew of the shard's next event (code 2), and the shard
    -- has nothing to publish.
    return {2, 0, '', 0, clock, 0, epoch, memberDead() and member or 0}
  end
  local top = redis.call('ZRANGE', R, 0, 7, 'WITHSCORES')
  local nxt, name = tonumber(top[2]), top[1] or ''
  local more = 0
  for i = 2, #top, 2 do
    if tonumber(top[i]) <= clock then more = more + 1 end
  end
  if cnt.leased > 0 then -- the expiry set holds the shard's leases
    local exp = redis.call('ZRANGE', E, 0, 0, 'WITHSCORES')
    if #exp > 0 and (not nxt or tonumber(exp[2]) < nxt) then nxt, name = tonumber(exp[2]), '' end
  end
  local pub, ver = tonumber(NV[7]), 0
  if not nxt then
    if pub then redis.call('HDEL', N, 'pub') end
    return {0, 0, '', 0, clock, 0, epoch, memberDead() and member or 0}
  end
  if not pub or nxt < pub then
    ver = num(NV[8]) + 1
    cnt.pub, cnt.pv, dirty.pub, dirty.pv = nxt, ver, true, true
    local job, i = string.match(P, '^(.*)/(%d+)[.%d]*}:$') -- its hash tag: job/i or job/i.k (shard.go)
    if wakeHere and job then -- as Store.publish does
      local w = job .. '}:wake'
      redis.call('HSET', w, i, string.format('%d:%d', ver, nxt))
      redis.call('HINCRBY', w, '#', 1)
    end
  elseif nxt > clock and nxt > pub then
    cnt.pub, dirty.pub = nxt, true
  end
  return {1, nxt, name, ver, clock, more, epoch, memberDead() and member or 0}
end

-- What a batch knows of the seen-set of the shard entered (pend.known,
-- false for nothing): member → false (not in it), 1 (added by the
-- script, in pend.seen, not yet in Redis) or 2 (in it). A batch reads
-- its links of a shard at once (seenAhead) and writes those that were new
-- in one SADD (flushSeen), instead of a SADD a link.

-- seenAhead reads which of members (a list) the seen-set of the shard
-- entered holds, in one SMISMEMBER a thousand. A server without it
-- (before Redis 6.2) leaves them unknown: a SADD a link, as before.
local function seenAhead(members)
  local known = pend.known or {}
  for i = 1, #members, 1000 do
    local chunk = {unpack(members, i, math.min(i + 999, #members))}
    local got = redis.pcall('SMISMEMBER', S, unpack(chunk))
    if type(got) ~= 'table' or got.err then break end
    for j, m in ipairs(chunk) do
      if known[m] == nil then known[m] = got[j] == 1 and 2 or false end
    end
  end
  if next(known) ~= nil then pend.known = known end
end

-- seenAdd adds member m to the seen-set of the shard entered and reports
-- whether it is new.
local function seenAdd(m)
  local known = pend.known
  local v
  if known then v = known[m] end
  if v == nil then return redis.call('SADD', S, m) == 1 end
  if v then return false end
  known[m] = 1
  pend.seen[#pend.seen + 1] = m
  return true
end

-- seenDrop takes back member m that seenAdd just added.
local function seenDrop(m)
  local known = pend.known
  local v
  if known then v = known[m] end
  if v ~= 1 then redis.call('SREM', S, m) end
  if v then known[m] = false end
end

-- flushSeen writes the members seenAdd added and seenDrop left, in one
-- SADD a thousand.
local function flushSeen()
  local l = pend.seen
  if #l == 0 then return end
  local known, out = pend.known, {}
  for _, m in ipairs(l) do
    if known[m] == 1 then
      out[#out + 1] = m
      known[m] = 2
    end
  end
  for i = 1, #out, 1000 do redis.call('SADD', S, unpack(out, i, math.min(i + 999, #out))) end
  pend.seen = {}
end

-- flush writes back the members added to the seen-set and the counters
-- that changed, in one command each.
local function flush()
  flushSeen()
  local args = {}
  for f in pairs(dirty) do
    args[#args + 1] = f
    args[#args + 1] = cnt[f]
  end
  if #args > 0 then redis.call('HSET', N, unpack(args)) end
  dirty = {}
end

-- settle writes what the script holds back (leases, places in the ready
-- set, counters) before it raises an error: Redis keeps the writes a
-- script made before an error, and they must agree. batch.lua settles
-- every shard it entered (shards.lua).
local settle = function()
  flushLeases()
  flushReady()
  flush()
end

-- leave appends the shard's tail to r and writes its counters back.
local function leave(r)
  local t = tail()
  flush()
  for i = 1, #t do r[#r + 1] = t[i] end
end

-- remember keeps r, the script's reply, in the memo, and returns it.
local function remember(r)
  if memo ~= '' then
    redis.call('HSET', memo, reqID, cmsgpack.pack(r))
    if string.sub(ARGV[4], 1, 1) == '!' then redis.call('PEXPIRE', memo, MEMO_TTL) end
  end
  return r
end

local function reply(r)
  leave(r)
  return remember(r)
end

-- migrate moves the shard entered from the layout of an earlier release
-- to this one (LAYOUT). A key's state a field each is packed when the key
-- is next saved.
local function migrate()
  local L, T = P .. 'lease', P .. 'token'
  cnt.token, dirty.token = num(redis.call('GET', T)), true
  local ls = redis.call('HGETALL', L)
  for i = 1, #ls, 2 do
    local token, name = ls[i], ls[i + 1]
    local at = redis.call('ZSCORE', E, token)
    if at then
      redis.call('ZREM', E, token)
      redis.call('ZADD', E, at, token .. ' ' .. name)
      local item = redis.call('HGET', P .. 'item', token)
      redis.call('HSET', P .. 'item', token, struct.pack('>dH', tonumber(at), #name) .. name .. (item or ''))
    end
  end
  redis.call('DEL', L, T)
  pend.moved = true
  cnt.lv, dirty.lv = LAYOUT, true
end

-- join loads the job's settings and notices a Redis that restarted (or a
-- replica promoted) since the job last ran on it: its state may have been
-- rolled back, and requests may have been under way. Every key then rests
-- a full Delay from the restart (applied lazily, as keys are touched), and the
-- fencing tokens jump past any a rolled-back counter could hand out again.
-- A job the Store used before (joined '1') that is gone altogether is an
-- error: Redis lost it.
local function join(joined)
  joined = string.sub(joined, 1, 1)
  epoch, epochAt, perHost, keep = num(NV[3]), num(NV[4]), math.max(num(NV[5]), 1), NV[6] == '1'
  if not runID then
    -- A plain find: matching a pattern over the whole reply cost a
    -- script more than the INFO itself. A run_id is 40 hex digits.
    local info = redis.call('INFO', 'server')
    local at = string.find(info, 'run_id:', 1, true)
    runID = at and string.sub(info, at + 7, at + 46) or '?'
  end
  local run = runID
  if NV[2] and NV[16] ~= LAYOUT then migrate() end
  if NV[2] == run then return end
  if not NV[2] then
    if joined == '1' then
      error({err = 'HEEDLOST the job\'s state is gone from Redis (restarted without persistence, or deleted)'})
    end
    redis.call('HSET', N, 'runid', run, 'lv', LAYOUT)
    return
  end
  epoch, epochAt = epoch + 1, clock
  redis.call('HSET', N, 'runid', run, 'epoch', epoch, 'epochat', epochAt)
  bump('token', 4294967296)
end

-- rest makes key s rest d µs from now through its bucket (bucket.lua: s
-- is its own), whose ready time s.na mirrors.
local function rest(s, d)
  if d <= 0 then return end
  bucketTake(s, clock, d)
  s.na = bucketReady(s, clock)
end

-- closed reports whether s's items are handed out to be reported, not
-- fetched: it was given up, or its robots.txt is unreachable until s.cu.
local function closed(s)
  return s.gu or s.cu > 0
end

-- key loads a politeness key's scheduling state: its bucket (bt, bl, br),
-- the bucket's ready time (na), its Delay, leases and closure, and its
-- queue: Q, a list of the items due when they were queued, in order, and
-- D, a sorted set of those due later, by Due (µs, the score), then by
-- arrival (a sequence number, 8 bytes big-endian, ahead of the item in the
-- member). Every item of D is due after every item of Q (see queue), so
-- that the key's first item is Q's, or D's when Q is empty. The key's state
-- (keystate.lua, one field of its hash) keeps D's length, first Due and
-- last sequence number, so that a key without items due later costs no
-- command more than before D, and Q's length and the key's score in the
-- ready set, so that loading and saving a key reads nothing but its hash.
-- With token, key loads the Due of lease token's item if a closed key
-- handed it out before it (field ld<token>); with withState, its host state (st) and revisit
-- state (rv), which a claim hands out.
-- The fields of a key's hash before its state was packed (keystate.lua):
-- a key saved by that layout is read from them, and they are deleted at
-- its next save.
local OLD_FIELDS = {'na', 'delay', 'leased', 'gu', 'ep', 'cu', 'bt', 'bl', 'br', 'dn', 'dh', 'ds',
  'sched', 'sm', 'smu', 'p', 'ql', 'rs'}

local function key(name, token, withState)
  local K = P .. 'k:' .. name
  local v
  if withState then
    v = redis.call('HMGET', K, 's', 'c', 'ep', token and 'ld' .. token or 'ld', 'st', 'rv')
  else
    v = redis.call('HMGET', K, 's', 'c', 'ep', token and 'ld' .. token or 'ld')
  end
  local s
  -- Each table is built whole, in one constructor: Lua then sizes it once
  -- instead of growing it field by field (a key is loaded some three
  -- times a page). A key is its own bucket (tokens, last, limit).
  if v[1] and v[2] then
    local na, bt, bl, br, rs, delay, leased, ep, ql, cu, dh, ds, dn, sched, sm, smu, gu, p = keyUnpack(v[1], v[2])
    s = {K = K, Q = P .. 'q:' .. name, D = P .. 'd:' .. name, name = name,
      ldue = token and tonumber(v[4]), st = v[5] or '', rv = v[6] or '',
      na = na, delay = delay, leased = leased, gu = gu == 1, ep = ep, cu = cu,
      tokens = bt, last = bl, limit = br,
      dlen = dn, dseq = ds, dhead = dn > 0 and dh or nil,
      sched = sched, sm = sm, smu = smu, persisted = p == 1, llen = ql, rs = rs >= 0 and rs,
      hot = v[1], cold = v[2], -- as loaded: save writes them only if they changed
      qlen = ql + dn, active = ql + dn > 0 or leased > 0, busy = leased > 0}
  elseif v[3] then -- saved by an earlier layout
    local o = redis.call('HMGET', K, unpack(OLD_FIELDS))
    local b = bucketOf(o[7], o[8], o[9])
    s = {K = K, Q = P .. 'q:' .. name, D = P .. 'd:' .. name, name = name, old = true,
      ldue = token and tonumber(v[4]), st = v[5] or '', rv = v[6] or '',
      na = num(o[1]), delay = num(o[2]), leased = num(o[3]), gu = o[4] == '1', ep = num(o[5]), cu = num(o[6]),
      tokens = b.tokens, last = b.last, limit = b.limit,
      dlen = num(o[10]), dhead = tonumber(o[11]), dseq = num(o[12]),
      sched = num(o[13]), sm = num(o[14]), smu = num(o[15]), persisted = o[16] == '1'}
    s.llen = tonumber(o[17]) or redis.call('LLEN', s.Q)
    if o[18] then s.rs = o[18] ~= '' and tonumber(o[18]) end -- else unknown: save reads it
    s.qlen = s.llen + s.dlen
    s.active, s.busy = s.qlen > 0 or s.leased > 0, s.leased > 0
  else -- never saved, or expired idle
    s = {K = K, Q = P .. 'q:' .. name, D = P .. 'd:' .. name, name = name,
      ldue = token and tonumber(v[4]), st = v[5] or '', rv = v[6] or '',
      na = 0, delay = 0, leased = 0, gu = false, ep = 0, cu = 0, tokens = 1, last = 0, limit = 0,
      dlen = 0, dseq = 0, sched = 0, sm = 0, smu = 0, persisted = false, llen = 0, rs = false,
      qlen = 0, active = false, busy = false}
  end
  if s.dlen > 0 and not s.dhead then -- not kept: Redis lost a write
    s.dhead = tonumber(redis.call('ZRANGE', s.D, 0, 0, 'WITHSCORES')[2]) or clock
  end
  if s.ep < epoch then
    rest(s, epochAt + s.delay - clock)
  end
  return s
end

-- dueOf returns the µs on the clock of a Due argument: '' for none (due
-- at once), µs since 1970 when the Store decides on its caller's clock,
-- else µs from the caller's now, which Redis's now stands for.
local function dueOf(v)
  if v == '' then return nil end
  if callerClock then return tonumber(v) end
  return clock + tonumber(v)
end

-- headDue returns when s's first item is due: nil for at once (Q has
-- items, or the queue is empty).
local function headDue(s)
  if s.llen > 0 or s.dlen == 0 then return nil end
  return s.dhead
end

-- dChanged notes that D lost n items from its front: s.dhead is its new
-- first Due.
local function dChanged(s, n)
  s.dlen = s.dlen - n
  s.dhead = nil
  if s.dlen > 0 then
    s.dhead = tonumber(redis.call('ZRANGE', s.D, 0, 0, 'WITHSCORES')[2])
  end
end

-- toD adds item to D, due at µs, as sequence number seq (the next if
-- nil).
local function toD(s, item, at, seq)
  if not seq then
    s.dseq = s.dseq + 1
    seq = s.dseq
  end
  redis.call('ZADD', s.D, at, struct.pack('>I8', seq) .. item)
  if s.dlen == 0 or at < s.dhead then s.dhead = at end
  s.dlen, s.qlen, s.moved = s.dlen + 1, s.qlen + 1, true
end

-- flushPush appends the items queue kept for s to Q: a batch's links
-- of one key cost one RPUSH (in chunks, as unpack bounds its values).
-- Whatever reads Q, or saves s, calls it first.
local function flushPush(s)
  local p = s.push
  if not p then return end
  s.push = nil
  for i = 1, #p, 1000 do
    redis.call('RPUSH', s.Q, unpack(p, i, math.min(i + 999, #p)))
  end
end

-- queue appends item to s's queue, due at µs at (nil: at once). An item
-- due by now goes to the end of Q, after the items of D that fell due
-- meanwhile, which move there first: Q then holds every item due by the
-- last time it was appended to, D only later ones. One due later goes to
-- D, after the items due no later. Q is written once s is saved
-- (flushPush).
local function queue(s, item, at)
  if at and at > clock then
    toD(s, item, at)
    return
  end
  if s.dlen > 0 and s.dhead <= clock then
    flushPush(s)
    local due = redis.call('ZRANGEBYSCORE', s.D, '-inf', clock)
    if #due > 0 then
      for i = 1, #due do
        redis.call('RPUSH', s.Q, string.sub(due[i], 9))
      end
      redis.call('ZREMRANGEBYRANK', s.D, 0, #due - 1)
      s.llen = s.llen + #due
    end
    dChanged(s, #due)
  end
  if s.push then s.push[#s.push + 1] = item else s.push = {item} end
  s.llen, s.qlen, s.moved = s.llen + 1, s.qlen + 1, true
end

-- front puts item back at the front of s's queue: it was the first, or
-- was handed out by a closed key before its Due at (nil: due), where it
-- goes back to, ahead of the items due at the same time.
local function front(s, item, at)
  if at and at > clock then
    toD(s, item, at, 0)
    return
  end
  redis.call('LPUSH', s.Q, item)
  s.llen, s.qlen, s.moved = s.llen + 1, s.qlen + 1, true
end

-- frontRun puts the items of run from the i-th on back at the front of
-- s's queue, in order, in one command: the items of a run (see grant)
-- not done when it ends.
local function frontRun(s, run, i)
  local n = #run - i + 1
  if n <= 0 then return end
  local back = {}
  for j = #run, i, -1 do back[#back + 1] = run[j] end
  redis.call('LPUSH', s.Q, unpack(back))
  s.llen, s.qlen, s.moved = s.llen + n, s.qlen + n, true
end

-- take takes s's first item, and returns it and, if it is not due yet
-- (a closed key hands out every item), its Due; nothing if the first item
-- is not due and s is not closed.
local function take(s)
  flushPush(s)
  if s.llen > 0 then
    s.llen, s.qlen = s.llen - 1, s.qlen - 1
    return redis.call('LPOP', s.Q)
  end
  if s.dhead > clock and not closed(s) then return nil end
  local h = redis.call('ZPOPMIN', s.D)
  local at = tonumber(h[2])
  s.qlen = s.qlen - 1
  dChanged(s, 1)
  if at > clock then return string.sub(h[1], 9), at end
  return string.sub(h[1], 9)
end

-- save writes s back — its state (keystate.lua) if it changed, its host
-- state st and revisit state rv if given, and the Due grant put — keeps
-- the host counters,
-- puts the key in the ready set if it has queued items and a free lease
-- slot, scored by when it may be claimed: the later of its bucket's ready
-- time and its first item's Due, or since when it has waited for a key
-- ready already (a key already there keeps its place unless it must now
-- wait longer, or was waiting and an item queued may be due sooner; a
-- closed key goes ahead of every other, at 0), and lets an idle key's
-- state expire once its rest is over.
local function save(s, st, rv)
  flushPush(s)
  -- Its score in the ready set (nil: out of it).
  local at
  if s.qlen > 0 and s.leased < perHost then
    at = 0
    if not closed(s) then
      local cur, wait = s.rs, s.na
      if cur == nil and pendR[s.name] ~= nil then cur = pendR[s.name] end
      if cur == nil then cur = tonumber(redis.call('ZSCORE', R, s.name)) end
      local due = headDue(s)
      if due and due > wait then wait = due end
      if cur and (cur <= clock or not s.moved) then at = math.max(cur, wait)
      else at = math.max(wait, clock) end
    end
  end
  local active, busy = s.qlen > 0 or s.leased > 0, s.leased > 0
  -- The state's p says the hash has no expiry: PERSIST only when it may.
  local stays = active or s.gu or keep
  local hot, cold = keyPack(s.na, s.tokens, s.last, s.limit, at or -1, s.delay, s.leased, epoch,
    s.llen, s.cu, s.dhead or 0, s.dseq, s.dlen, s.sched, s.sm, s.smu, s.gu and 1 or 0, stays and 1 or 0)
  local extra = s.put
  if st then
    extra = extra or {}
    extra[#extra + 1], extra[#extra + 2] = 'st', st
    if rv then extra[#extra + 1], extra[#extra + 2] = 'rv', rv end
  end
  if extra then
    redis.call('HSET', s.K, 's', hot, 'c', cold, unpack(extra))
    s.put = nil
  elseif hot ~= s.hot or cold ~= s.cold then
    redis.call('HSET', s.K, 's', hot, 'c', cold)
  end
  s.hot, s.cold = hot, cold
  if s.old then
    redis.call('HDEL', s.K, unpack(OLD_FIELDS))
    s.old = nil
  end
  if active ~= s.active then bump('hosts', active and 1 or -1) end
  if busy ~= s.busy then bump('busy', busy and 1 or -1) end
  s.active, s.busy = active, busy
  if at then
    if at ~= s.rs then setPending(s.name, at) end
  elseif s.rs ~= false then
    setPending(s.name, false)
  end
  s.rs = at or false
  if stays then
    if not s.persisted then redis.call('PERSIST', s.K) end
  else
    redis.call('PEXPIRE', s.K, math.floor(math.max(s.na - clock, 0) / 1000) + IDLE_TTL)
  end
  s.persisted = stays
end

-- leaseMember returns the member of the expiry set of lease token of key
-- name, which orders the leases by expiry.
local function leaseMember(token, name)
  return token .. ' ' .. name
end

-- leaseRecord returns the item hash's record of a lease of key name,
-- expiring at µs (or, at -ID, held while member ID beats), of item ('' for a lease of the key alone): what a Done
-- reads to know the lease is held, in one command. The record of a run
-- (run, the items leased at once, item the first) flags the name's
-- length with RUN and holds every item behind its length.
local RUN = 32768
-- The score in the expiry set of a lease held while its member beats
-- (grant): 2⁵² µs, in the year 2112.
local LIVE = 4503599627370496
local function leaseRecord(name, at, item, run)
  if not run then return struct.pack('>dH', at, #name) .. name .. (item or '') end
  local parts = {struct.pack('>dH', at, #name + RUN), name}
  for _, it in ipairs(run) do
    parts[#parts + 1], parts[#parts + 2] = struct.pack('>I4', #it), it
  end
  return table.concat(parts)
end

-- leaseOf returns when lease token of key name expires, its item (nil
-- for a lease of the key alone) and, for a run, its items in order (the
-- first is item); nothing if the lease is not held.
local function leaseOf(token, name)
  if pend.gone[token] then return nil end
  local v = pend.item[token] or redis.call('HGET', LI, token)
  if not v or #v < 10 then return nil end
  local at, n = struct.unpack('>dH', v)
  local run = n >= RUN
  if run then n = n - RUN end
  if string.sub(v, 11, 10 + n) ~= name then return nil end
  if not run then
    local item = string.sub(v, 11 + n)
    if item == '' then item = nil end
    return at, item
  end
  local items, p = {}, 11 + n
  while p + 3 <= #v do
    local l = struct.unpack('>I4', v, p)
    items[#items + 1] = string.sub(v, p + 4, p + 3 + l)
    p = p + 4 + l
  end
  return at, items[1], items
end

-- unlease ends lease token of key name: it loads the key, s, with one
-- lease fewer, and returns it. Its records go with the script's next
-- write of them (flushLeases).
local function unlease(token, name)
  local m = leaseMember(token, name)
  if pend.item[token] then -- granted by this script: never written
    unpend(pend.add, m, true)
    unpend(pend.li, token)
    pend.item[token] = nil
  else
    pend.del[#pend.del + 1] = m
    pend.lidel[#pend.lidel + 1] = token
  end
  pend.gone[token] = true
  bump('leased', -1)
  local s = key(name, token)
  s.leased = math.max(s.leased - 1, 0)
  if s.ldue then redis.call('HDEL', s.K, 'ld' .. token) end
  return s
end

-- expire ends lease token of key name, of item (of run's items, the
-- first skip of which were done: they stay done): the items, if any, go
-- back to the front of their key's queue, in order, and the key rests a
-- full Delay from restFrom, since a request may have been under way.
local function expire(token, name, item, restFrom, run, skip)
  local s = unlease(token, name)
  if run then
    skip = skip or 0
    frontRun(s, run, skip + 1)
    -- A run's items after its first stayed counted as queued.
    bump('queued', 1 - skip)
  elseif item then
    front(s, item, s.ldue)
    bump('queued', 1)
  end
  rest(s, restFrom + s.delay - clock)
  save(s)
end

-- sweep takes back a bounded number of expired leases.
local function sweep()
  if cnt.leased <= 0 then return end -- no lease to expire
  flushLeases()
  local due = redis.call('ZRANGEBYSCORE', E, '-inf', clock, 'WITHSCORES', 'LIMIT', 0, 32)
  for i = 1, #due, 2 do
    local token, name = string.match(due[i], '^(%d+) (.*)$')
    local _, item, run = leaseOf(token or '', name or '')
    if token then
      expire(token, name, item, tonumber(due[i + 1]), run)
    else -- not a record of this layout
      redis.call('ZREM', E, due[i])
      pend.moved = true
    end
  end
end

-- grant records a lease of s (of item, due at due if it is handed out
-- before, or of the key alone when item is false; or of the items of
-- run, item its first) and returns its token and the lease left; the next
-- save of s writes the Due to its hash. The lease of a member is held
-- while the member beats: its record says so (at -ID, lease left -ID),
-- and its member of the expiry set is scored LIVE, after every expiry —
-- no sweep takes it; reclaim.lua does once the member is dead — so that
-- a shard with leases still has a next event (tail). Without a member it expires lease µs from now
-- — a run a quarter of a lease later: the Store hands its items out
-- within that quarter, each with a lease left.
local function grant(s, item, lease, due, run)
  bump('token', 1)
  local token = string.format('%d', cnt.token)
  local at, exp
  if member > 0 then
    at, exp = -member, LIVE
  else
    if run then lease = lease + math.floor(lease / 4) end
    at = clock + lease
    exp = at
  end
  pend.add[#pend.add + 1], pend.add[#pend.add + 2] = exp, leaseMember(token, s.name)
  local rec = leaseRecord(s.name, at, item, run)
  pend.li[#pend.li + 1], pend.li[#pend.li + 2], pend.item[token] = token, rec, rec
  if due then s.put = {'ld' .. token, due} end
  bump('leased', 1)
  s.leased = s.leased + 1
  if perHost > 1 and not closed(s) then
    -- More than one lease at once: the claim takes the token, so that
    -- the next may start no sooner than a Delay after this one.
    rest(s, s.delay)
  end
  if member > 0 then return cnt.token, -member end
  return cnt.token, lease
end

-- setPerHost records the PerHost of the claim, which Add needs.
local function setPerHost(v)
  v = math.max(tonumber(v) or 1, 1)
  if v ~= perHost then
    perHost = v
    redis.call('HSET', N, 'perhost', v)
  end
end

-- setClaim records a claim's PerHost and runMax, v: 'PERHOST', or
-- 'PERHOST/RUN' when a key ready again at once may lease up to RUN
-- items at once (ClaimOptions.Affinity; see claimOne).
local function setClaim(v)
  local p, r = string.match(v, '^(%d+)/(%d+)$')
  setPerHost(p or v)
  runMax = math.max(tonumber(r) or 1, 1)
end

-- begin starts a call: it sets what the call's arguments say, forgets
-- the memos of ARGV[4], enters ARGV[1]'s shard and joins it. It returns
-- the reply a retried request had, if its memo holds one (the script
-- then returns it and does nothing more), nil otherwise.
-- ARGV[4] may end in '|' and the seen-set members of seen-only links
-- whose reports the Store heard written (Store.ReportsWritten), each
-- behind its length and ':': they leave the member's pending fields
-- (pendingOf), after enter.
local function begin()
  callerClock, wakeHere = string.sub(ARGV[6], 1, 1) == '1', string.sub(ARGV[6], 2, 2) == 'w'
  quietTail = false
  memberID = string.match(ARGV[7], ':(%d+)$') or '0'
  member = tonumber(memberID)
  -- Not runID: a server's run_id is its Lua VM's for the VM's life, which
  -- a restart, a failover and a FUNCTION LOAD each end; a function reads
  -- it once (join), a script run by EVALSHA once a call.
  P, N, R, E, LI, S, NV, cnt, dirty, clock, redisNow = nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil
  pend, pendR = nil, nil
  epoch, epochAt, perHost, keep, runMax = 0, 0, 1, false, 1
  states = {}
  memo, reqID = ARGV[2], ARGV[3]
  retried = string.sub(reqID, 1, 1) == '+'
  if retried then reqID = string.sub(reqID, 2) end
  local forgetArg, written = ARGV[4], nil
  local bar = string.find(forgetArg, '|', 1, true)
  if bar then forgetArg, written = string.sub(ARGV[4], 1, bar - 1), string.sub(ARGV[4], bar + 1) end
  if memo ~= '' then
    local ids = {}
    for id in string.gmatch(forgetArg, '[^,!]+') do ids[#ids + 1] = id end
    if #ids > 0 then redis.call('HDEL', memo, unpack(ids)) end
    if retried then
      local m = redis.call('HGET', memo, reqID)
      if m then return cmsgpack.unpack(m) end
    end
  end
  enter(ARGV[1], KEYS[1])
  join(ARGV[7])
  if written and member > 0 then
    local f, i = {}, 1
    while i <= #written do
      local c = string.find(written, ':', i, true)
      local n = tonumber(string.sub(written, i, c - 1))
      f[#f + 1] = pendingOf(memberID) .. string.sub(written, c + 1, c + n)
      i = c + n + 1
    end
    if #f > 0 then redis.call('HDEL', N, unpack(f)) end
  end
  return nil
end
