-- keystate.lua: a politeness key's scheduling state, packed in two
-- fields of its hash: a script reads and writes two values instead of a
-- field each, which Lua would format and parse every time (4x the cost in
-- a script's loop). Each stays within 64 bytes, so that Redis keeps a
-- key's hash in its compact encoding (hash-max-listpack-value). Shared by
-- the prelude and read.lua. Little-endian, in order:
--
-- s, what most scripts change (60 bytes):
--   na     double  when the key's token is back, µs
--   bt bl br       its bucket: tokens, when counted (µs), tokens a second
--   rs     double  its score in the ready set, -1 for none
--   delay  double  its Delay, µs
--   leased int32   its leases
--   ep     int32   the epoch it was last saved in
--   ql     int32   the length of its queue of items due when queued
-- c, the rest (42 bytes):
--   cu     double  closed until, µs (0: open)
--   dh     double  the first Due of its queue of items due later
--   ds     double  that queue's last sequence number
--   dn     int32   that queue's length
--   sched sm smu   int32 each: pages scheduled, sitemaps, pages from
--                  sitemaps (for the per-key limits)
--   gu     byte    1 if given up
--   p      byte    1 if its hash has no expiry
local KEY_HOT, KEY_COLD = '<ddddddi4i4i4', '<dddi4i4i4i4BB'

-- keyUnpack returns the fields above packed in s and c, in order (the
-- state is loaded and saved for every key a script touches: no table in
-- between).
local function keyUnpack(s, c)
  local na, bt, bl, br, rs, delay, leased, ep, ql = struct.unpack(KEY_HOT, s)
  local cu, dh, ds, dn, sched, sm, smu, gu, p = struct.unpack(KEY_COLD, c)
  return na, bt, bl, br, rs, delay, leased, ep, ql, cu, dh, ds, dn, sched, sm, smu, gu, p
end

-- keyPack packs the fields above, given in order, and returns s and c.
local function keyPack(na, bt, bl, br, rs, delay, leased, ep, ql, cu, dh, ds, dn, sched, sm, smu, gu, p)
  return struct.pack(KEY_HOT, na, bt, bl, br, rs, delay, leased, ep, ql),
    struct.pack(KEY_COLD, cu, dh, ds, dn, sched, sm, smu, gu, p)
end
