package ratelimit

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// Bucket is the token bucket that paces one politeness key: a
// golang.org/x/time/rate Limiter of burst 1, whose one token is the key's
// permission to start its next request. The key is ready when the token is
// there; taking it makes the key rest until the token has come back, at the
// rate Every(rest). Burst 1 is what politeness asks: a key that waited
// longer than its delay earns no extra request, so a site never sees two
// requests closer than the delay; requests in flight at once (PerHost) are
// bounded by the frontier's leases, never by a burst.
//
// The frontier's Schedule keeps one Bucket per key with pacing state, and
// redisstore the same bucket, with rate's arithmetic, in its Lua scripts:
// a token is taken at each claim when a key may have several requests in
// flight (rest: the key's Delay, so requests start at least that far
// apart), and at each answer (rest: what Policy.Rest says — with one
// request in flight the key's delay, counted from the answer). HostState's
// NextAllowed mirrors ReadyAt, for the Stores to persist and report;
// a Store that reopens rebuilds the bucket from it with Take, so that a
// restart grants no burst.
//
// The zero Bucket is full: a key never paced is ready. A Bucket is not safe
// for concurrent use (its Limiter is, but Take's read and update are two
// steps); its Store serialises calls. It must not be copied after first
// use.
type Bucket struct {
	lim *rate.Limiter // nil until a token is first taken: full
}

// fullEnough is how close to one token a bucket counts as full: float
// arithmetic may leave it a few units in the last place short at the very
// instant its token is due, and a billionth of a token is a nanosecond of a
// one-second delay.
const fullEnough = 1 - 1e-9

// Take takes the token at now for a request starting or an answer arriving,
// so that the key rests d from now: when the token is there, the rate
// becomes Every(d) and the token is reserved (rate's SetLimitAt and
// ReserveN), so it comes back exactly d later. When it is not back yet —
// another request of the key started recently, or a pause is already under
// way — the token due is reserved and the rate slowed so that the key is
// ready again d from now, unless it would be later anyway: a rest never
// shortens another. A d of zero or less changes nothing. Take returns
// ReadyAt(now) after.
func (b *Bucket) Take(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return b.ReadyAt(now)
	}
	if b.lim == nil {
		b.lim = rate.NewLimiter(rate.Every(d), 1)
	}
	tokens := b.lim.TokensAt(now)
	switch {
	case tokens >= fullEnough:
		b.lim.SetLimitAt(now, rate.Every(d))
		b.lim.ReserveN(now, 1)
	case d.Seconds() > (1-tokens)/float64(b.lim.Limit()):
		// The token due is reserved too, and the rate slowed so that
		// the 2-tokens it takes to be back at one come in d: counted
		// from below zero, not from just below one, the arithmetic
		// keeps its precision when the token was nearly back.
		b.lim.SetLimitAt(now, rate.Limit((2-tokens)/d.Seconds()))
		b.lim.ReserveN(now, 1)
	}
	return b.ReadyAt(now)
}

// ReadyAt returns when the token is there again: now if it is, else when
// the tokens, counted from TokensAt(now) at rate Limit(), reach one.
func (b *Bucket) ReadyAt(now time.Time) time.Time {
	if b.lim == nil {
		return now
	}
	tokens := b.lim.TokensAt(now)
	if tokens >= fullEnough {
		return now
	}
	wait := math.Round((1 - tokens) / float64(b.lim.Limit()) * float64(time.Second))
	if wait >= math.MaxInt64 {
		return now.Add(math.MaxInt64)
	}
	return now.Add(time.Duration(wait))
}
