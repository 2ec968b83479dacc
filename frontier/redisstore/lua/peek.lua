-- peek.lua: nothing but the shard's tail (see reply): its next event, for
-- a Store that lost track of it.
return reply({})
