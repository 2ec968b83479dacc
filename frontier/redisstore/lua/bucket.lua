-- bucket.lua: a politeness key's token bucket, the twin of
-- ratelimit.Bucket: golang.org/x/time/rate's Limiter with burst 1, with its
-- arithmetic (advance, SetLimitAt, ReserveN) on Redis's clock, in µs. A
-- bucket is {tokens, last: the µs they were counted at, limit: tokens a
-- second}; one never taken from is full. It touches nothing in Redis, so
-- that bucket_test.go can drive it and rate.Limiter with the same events
-- and hold them to the same ready times.

-- A bucket within a billionth of a token of full is full (float arithmetic
-- may fall short by a few units in the last place when the token is due).
local BUCKET_FULL = 1 - 1e-9

-- bucketOf returns the bucket stored as its fields' values (bt, bl, br),
-- or a full one when there are none.
local function bucketOf(tokens, last, limit)
  if not tokens then return {tokens = 1, last = 0, limit = 0} end
  return {tokens = tonumber(tokens) or 1, last = tonumber(last) or 0, limit = tonumber(limit) or 0}
end

-- bucketTokens returns b's tokens at t (rate's advance): what it held,
-- plus what came in since, up to one.
local function bucketTokens(b, t)
  local last = b.last
  if t < last then last = t end
  local tokens = b.tokens
  if b.limit > 0 then tokens = tokens + (t - last) / 1e6 * b.limit end
  if tokens > 1 then tokens = 1 end
  return tokens
end

-- bucketReady returns when b has its token again, in whole µs: t if it
-- has.
local function bucketReady(b, t)
  local tokens = bucketTokens(b, t)
  if tokens >= BUCKET_FULL then return t end
  return t + math.floor((1 - tokens) / b.limit * 1e6 + 0.5)
end

-- bucketTake takes b's token at t so that its key rests d µs from t, as
-- ratelimit.Bucket.Take: a full bucket takes the rate 1/d and its token is
-- reserved; one whose token is not back yet reserves the token due at a
-- rate slowed so that it is ready d from t, unless it would be later
-- anyway. d <= 0 changes nothing.
local function bucketTake(b, t, d)
  if d <= 0 then return end
  local tokens = bucketTokens(b, t)
  local limit
  if tokens >= BUCKET_FULL then
    limit = 1 / (d / 1e6)
  elseif d / 1e6 > (1 - tokens) / b.limit then
    limit = (2 - tokens) / (d / 1e6)
  else
    return
  end
  -- SetLimitAt(t, limit), then ReserveN(t, 1).
  b.tokens, b.last, b.limit = tokens - 1, t, limit
end
