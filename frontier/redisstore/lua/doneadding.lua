-- doneadding.lua: add, then finish, in one call (frontier.DoneAdder): a
-- fetched page's links and the end of its lease. ARGV[8..24] are finish's
-- arguments (a Done's), add's start at ARGV[25]. Reply: finish's code,
-- then add's codes.
local codes = add(25)
local r = {finish()}
for _, c in ipairs(codes) do
  r[#r + 1] = c
end
return reply(r)
