package redisstore

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heedcrawl/heed/internal/redistest"
	"github.com/heedcrawl/heed/ratelimit"
)

// bucketTestScript runs bucket.lua, the bucket every script of the Store
// keeps per key, on an explicit clock: for each event of ARGV (three
// each: the time in µs, the rest in µs, '1' to start from a new bucket
// first, as a Store that reopens does) it reads the bucket from the hash
// KEYS[1], takes its token, writes it back — the round trip through
// Redis's strings every script makes — and answers the bucket's ready
// time, in µs.
var bucketTestScript = redis.NewScript(bucketSrc + `
redis.call('DEL', KEYS[1])
local out = {}
for i = 1, #ARGV, 3 do
  if ARGV[i + 2] == '1' then redis.call('DEL', KEYS[1]) end
  local v = redis.call('HMGET', KEYS[1], 'bt', 'bl', 'br')
  local b = bucketOf(v[1], v[2], v[3])
  local t = tonumber(ARGV[i])
  bucketTake(b, t, tonumber(ARGV[i + 1]))
  redis.call('HSET', KEYS[1], 'bt', b.tokens, 'bl', b.last, 'br', b.limit)
  out[#out + 1] = bucketReady(b, t)
end
return out
`)

// bucketEvent is one token taken from a key's bucket: at (µs) for a rest
// of d (µs), from a new bucket when fresh.
type bucketEvent struct {
	at, d int64
	fresh bool
}

// TestBucketMatchesRate is the Lua bucket's differential test, with
// golang.org/x/time/rate (through ratelimit.Bucket) as the reference
// model, as temoto's parser is for robots.txt: both take the same
// generated events — claims with one or several requests in flight,
// answers resting the key's delay, Crawl-delays read and changed,
// failures backing off, Retry-After pauses, restarts, and now and then a
// now that arrives late — and must agree on every ready time within 1 ms.
func TestBucketMatchesRate(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	rng := rand.New(rand.NewPCG(19, 9309))
	const sequences = 200
	events := 0
	var worst time.Duration
	for seq := range sequences {
		perHost := 1 + seq%3
		pol, err := ratelimit.NewPolicy(ratelimit.Config{
			MinDelay: time.Duration(seq%4) * 500 * time.Millisecond, Concurrency: perHost, Jitter: -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		evs := bucketEvents(rng, pol, perHost, 300)
		args := make([]any, 0, 3*len(evs))
		for _, e := range evs {
			args = append(args, e.at, e.d, flag(e.fresh))
		}
		v, err := bucketTestScript.Run(ctx, c, []string{"bucket:test"}, args...).Int64Slice()
		if err != nil {
			t.Fatalf("sequence %d: %v", seq, err)
		}
		if len(v) != len(evs) {
			t.Fatalf("sequence %d: %d answers for %d events", seq, len(v), len(evs))
		}
		var b ratelimit.Bucket
		for i, e := range evs {
			if e.fresh {
				b = ratelimit.Bucket{}
			}
			now := time.UnixMicro(e.at)
			want := b.Take(now, time.Duration(e.d)*time.Microsecond)
			got := time.UnixMicro(v[i])
			diff := got.Sub(want).Abs()
			worst = max(worst, diff)
			events++
			if diff > time.Millisecond {
				t.Fatalf("sequence %d, event %d (%+v): Lua bucket ready at %v, rate.Limiter at %v: %v apart",
					seq, i, e, got.Sub(now), want.Sub(now), diff)
			}
		}
	}
	t.Logf("%d events in %d sequences: ready times at most %v apart", events, sequences, worst)
}

// bucketEvents generates n events of one key crawled with perHost
// requests in flight and paced by pol, as a Store sees them: claims when the key is ready
// (each taking a token at its Delay when perHost > 1), answers after a
// response time resting the key as ratelimit.Policy says, the policy's
// state moved by Crawl-delays, failures and Retry-After, and restarts.
func bucketEvents(rng *rand.Rand, pol *ratelimit.Policy, perHost, n int) []bucketEvent {
	var (
		h        ratelimit.HostState
		evs      []bucketEvent
		inFlight []time.Time // answers due
		ready    time.Time   // the key's ready time as the events make it
	)
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(time.Hour)))).Truncate(time.Microsecond)
	take := func(at time.Time, d time.Duration, fresh bool) {
		d = d.Round(time.Microsecond)
		if at.Add(d).After(ready) || fresh {
			ready = at.Add(d)
		}
		evs = append(evs, bucketEvent{at: at.UnixMicro(), d: d.Microseconds(), fresh: fresh})
	}
	for len(evs) < n {
		// The next answer, or a claim once the key is ready and a slot free.
		next := -1
		for i, due := range inFlight {
			if next < 0 || due.Before(inFlight[next]) {
				next = i
			}
		}
		if len(inFlight) < perHost && (next < 0 || !ready.After(inFlight[next])) {
			at := ready.Add(time.Duration(rng.IntN(3)) * time.Duration(rng.IntN(400)) * time.Millisecond)
			now = maxTime(now, at)
			if perHost > 1 {
				take(now, h.Delay, false)
			}
			inFlight = append(inFlight, now.Add(time.Duration(rng.Int64N(int64(3*time.Second)))).Truncate(time.Microsecond))
			if rng.IntN(8) == 0 { // a robots.txt hop's lease, ending with a rest
				take(stale(rng, now), time.Duration(rng.Int64N(int64(10*time.Second))), false)
			}
			continue
		}
		now = maxTime(now, inFlight[next])
		inFlight = append(inFlight[:next], inFlight[next+1:]...)
		answer(rng, pol, &h, now)
		take(stale(rng, now), pol.Rest(h, now), false)
		if rng.IntN(8) == 0 { // a lease handed out closed, ending with a rest
			now = now.Add(time.Duration(rng.Int64N(int64(time.Second)))).Truncate(time.Microsecond)
			take(now, time.Duration(rng.Int64N(int64(10*time.Second))), false)
		}
		if rng.IntN(40) == 0 { // a restart: the bucket rebuilt from its ready time
			inFlight = inFlight[:0]
			now = now.Add(time.Duration(rng.Int64N(int64(time.Minute))))
			take(now, max(ready.Sub(now), h.Delay), true)
		}
	}
	return evs
}

// stale returns now, or now and then a time up to 20 ms before it: a now
// a worker read before another's that reached the Store first.
func stale(rng *rand.Rand, now time.Time) time.Time {
	if rng.IntN(10) == 0 {
		return now.Add(-time.Duration(rng.IntN(20000)) * time.Microsecond)
	}
	return now
}

// answer moves h as an answer at now would, by the rules of
// ratelimit.Policy: a Crawl-delay read now and then, successes, failures
// that back off and 429s with Retry-After.
func answer(rng *rand.Rand, pol *ratelimit.Policy, h *ratelimit.HostState, now time.Time) {
	if rng.IntN(10) == 0 {
		cd := time.Duration(rng.IntN(40)) * 250 * time.Millisecond
		pol.SetCrawlDelay("k", h, cd, cd > 0)
	}
	switch r := rng.IntN(10); {
	case r < 6: // success: back-off halves, then goes
		h.Backoff /= 2
		if h.Backoff < time.Second {
			h.Backoff = 0
		}
	case r < 9: // a failure: the delay doubles
		cur, _, _ := pol.Delay(*h)
		h.Backoff = min(2*max(cur, 500*time.Millisecond), ratelimit.DefaultMaxDelay)
	default: // 429 with Retry-After: seconds, or up to the hour it is capped at
		pause := time.Duration(rng.Int64N(int64(5 * time.Second)))
		if rng.IntN(2) == 0 {
			pause = time.Duration(rng.Int64N(int64(time.Hour)))
		}
		h.PausedUntil = now.Add(pause).Truncate(time.Microsecond)
	}
	h.Delay, _, _ = pol.Delay(*h)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
