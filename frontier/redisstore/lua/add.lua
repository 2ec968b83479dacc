-- add.lua: add-if-new for a batch, as the function add(a, z), whose
-- arguments are ARGV[a..z] (z: #ARGV if nil): ARGV[a..a+3] are the limits (how many
-- pages the batch may add, -1 for no limit: the Store reserved them of
-- the job's MaxPages; MaxPagesPerHost, MaxSitemapsPerHost,
-- MaxSitemapURLsPerHost, 0 for none), ARGV[a+4] what the seen-set holds ('hash' or 'url'); from
-- ARGV[a+5], five per item: its seen-set member, key, class (0
-- page, 1 sitemap, 2 page from a sitemap, 3 seen only: the seen-set takes
-- it, no queue: frontier.Item.SeenOnly), encoded item and Due (see
-- dueOf; '' for at once). It returns one
-- code per item: 0 queued, 1 seen, 3 page limit, 4 host limit, 5 sitemap
-- limit; 6, 7 a page the page or host limit refused, marked seen and
-- queued to be reported (refusedItem). An item of a key given up is queued whatever the limits, and not
-- counted against them: it is handed out at once to be reported, as the
-- items queued when the key was given up are (frontier.Store.GiveUp).

-- refusedItem returns item, in package codec's encoding, with its
-- frontier.Item.Refused set to r: codec's flag itemRefused (1<<13) added
-- to its flags (a uvarint after the version byte) and r appended, the
-- last field. An item that has the flag already is returned as it is.
local function refusedItem(item, r)
  local flags, mul, i = 0, 1, 2
  while true do
    local b = string.byte(item, i)
    flags = flags + (b % 128) * mul
    mul, i = mul * 128, i + 1
    if b < 128 then break end
  end
  if math.floor(flags / 8192) % 2 == 1 then return item end
  flags = flags + 8192
  local out = {}
  repeat
    local b = flags % 128
    flags = math.floor(flags / 128)
    if flags > 0 then b = b + 128 end
    out[#out + 1] = string.char(b)
  until flags == 0
  return string.sub(item, 1, 1) .. table.concat(out) .. string.sub(item, i) .. string.char(r)
end

local function add(a, z)
  local budget, maxHost, maxSM, maxSMU = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  if (maxHost > 0 or maxSM > 0 or maxSMU > 0) and not keep then
    -- Per-key counters must outlive the keys' queues.
    keep = true
    redis.call('HSET', N, 'keep', 1)
  end
  local seenKind = NV[14]
  if seenKind and seenKind ~= ARGV[a + 4] then
    settle()
    error({err = 'HEEDSEEN the job\'s seen-set holds ' .. seenKind .. ', not ' .. ARGV[a + 4] .. ' (Options.ExactSeen differs)'})
  elseif not seenKind then
    redis.call('HSET', N, 'seen', ARGV[a + 4])
  end
  local used = 0
  local keys, order, codes, added = {}, {}, {}, 0
  for i = a + 5, z or #ARGV, 5 do
    local name, class = ARGV[i + 1], ARGV[i + 2]
    local code = 0
    if class == '3' then -- seen only: its key is not touched
      if not seenAdd(ARGV[i]) then
        code = 1
      elseif member > 0 and ARGV[i + 3] ~= '' and not memberDead() then
        -- Pending its report until the member's Store hears it written
        -- (prelude.lua): a field of the counters hash, written with them.
        cnt[pendingOf(memberID) .. ARGV[i]], dirty[pendingOf(memberID) .. ARGV[i]] = name .. '\n' .. ARGV[i + 3], true
      end
    elseif not seenAdd(ARGV[i]) then
      -- Seen before: its key is not read (most links a Store sends).
      code = 1
    else
      local s = keys[name]
      if not s then
        s = key(name)
        keys[name] = s
        order[#order + 1] = s
      end
      if s.gu then
        -- no limit applies: it is never fetched
      elseif class == '1' then
        if maxSM > 0 and s.sm >= maxSM then code = 5 end
      elseif budget >= 0 and used >= budget then
        code = 3
      elseif maxHost > 0 and s.sched >= maxHost then
        code = 4
      elseif class == '2' and maxSMU > 0 and s.smu >= maxSMU then
        code = 5
      end
      if code == 5 then
        -- A sitemap limit only counts: the URL stays unseen, to be
        -- crawled if a page links to it.
        seenDrop(ARGV[i])
      elseif code == 3 or code == 4 then
        -- A page a limit refuses is reported once, on a lease of its own
        -- (frontier.ErrReported): marked seen and queued, not counted.
        queue(s, refusedItem(ARGV[i + 3], code - 2), dueOf(ARGV[i + 4]))
        s.changed, added, code = true, added + 1, code + 3
      else
        queue(s, ARGV[i + 3], dueOf(ARGV[i + 4]))
        s.changed = true
        added = added + 1
        if s.gu then
          -- counted as queued only, like the key's items before
        elseif class == '1' then
          s.sm = s.sm + 1
        else
          s.sched = s.sched + 1
          used = used + 1
          if class == '2' then s.smu = s.smu + 1 end
        end
      end
    end
    codes[#codes + 1] = code
  end
  for _, s in ipairs(order) do
    if s.changed then save(s) end
  end
  if added > 0 then
    bump('queued', added)
    bump('scheduled', used)
  end
  return codes
end
