-- setup.lua: a job's settings, in its own slot. KEYS[1] the job's hash
-- (heed:{job}:n), ARGV[1] the shards of a new job, ARGV[2] '1' to start
-- one. Reply: the job's shards, 0 for a job of an earlier release (its
-- keys in the job's slot: one shard, the job's prefix), -1 for no job;
-- then 1 if its shards' hash tags are spread over the slots (field
-- spread: every job started by this release), else 0.
local v = redis.call('HMGET', KEYS[1], 'shards', 'runid', 'queued', 'seen', 'spread')
if v[1] then return {tonumber(v[1]), v[5] and 1 or 0} end
if v[2] or v[3] or v[4] then return {0, 0} end
if ARGV[2] ~= '1' then return {-1, 0} end
redis.call('HSET', KEYS[1], 'shards', ARGV[1], 'spread', 1)
return {tonumber(ARGV[1]), 1}
