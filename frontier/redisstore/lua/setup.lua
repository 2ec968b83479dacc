-- setup.lua: a job's settings, in its own slot. KEYS[1] the job's hash
-- (heed:{job}:n), ARGV[1] the shards of a new job, ARGV[2] '1' to start
-- one. Reply: the job's shards, 0 for a job of an earlier release (its
-- keys in the job's slot: one shard, the job's prefix), -1 for no job.
local v = redis.call('HMGET', KEYS[1], 'shards', 'runid', 'queued', 'seen')
if v[1] then return tonumber(v[1]) end
if v[2] or v[3] or v[4] then return 0 end
if ARGV[2] ~= '1' then return -1 end
redis.call('HSET', KEYS[1], 'shards', ARGV[1])
return tonumber(ARGV[1])
