// Package ratelimit decides how long a host must rest between requests, so
// that every site sees at most one request per delay, however many workers —
// or processes — the crawler runs.
//
// Two types divide the work. Policy decides: given a host's pacing state
// (a HostState) and the answer to a request, it updates the state and says
// how long the host rests. Bucket paces: each politeness key's token
// bucket, a golang.org/x/time/rate Limiter of burst 1, whose token is the
// key's permission to start its next request; a rest is a token taken at
// the rate Every(rest). The frontier's Store keeps one Bucket and one
// HostState per key, persists and shares them (frontier/redisstore runs
// the same bucket, with rate's arithmetic, in Lua on Redis's clock), so that
// one owner knows when each host may next be fetched, across restarts and
// across the processes of a distributed crawl; HostState.NextAllowed
// mirrors the bucket's ready time. Burst 1 is politeness: a key idle for
// an hour earns one request, not a volley. Neither type keeps state
// beyond what it is given: Policy none at all, a Bucket only its key's.
//
// The delay between two requests to one key is
//
//	min(MaxDelay, max(MinDelay, Crawl-delay, AdaptiveFactor×response time, back-off))
//
// so a site can slow the crawler down through robots.txt or by failing, but
// never speed it up beyond what the user configured, and a site asking for an
// absurd Crawl-delay is crawled at MaxDelay instead (the clamp is logged).
//
// With one request in flight per key (the default), Observe makes the host
// rest its delay from the answer — the token is taken when the answer
// arrives — so the next request starts at least the delay after the
// previous answer: however late the server saw the previous request, it
// never sees two closer than the delay. With more in flight, each request
// start (the frontier's claim) takes a token at the delay's rate, so the
// delay separates request starts, and only a pause makes the host rest
// from an answer; it acts on the same bucket, stretching the rest under
// way, never shortening it.
//
// # Back-off
//
// Observe feeds each response back into the host's state. A 429 or 503 with
// a Retry-After header (seconds or an HTTP date, parsed by ParseRetryAfter,
// capped by MaxRetryAfter) pauses the host until then. A 429 or 503 without
// it, any other 5xx, a timeout or a network error doubles the host's delay
// (at least 1 s, plus jitter, up to MaxDelay); each success halves the extra
// delay until it is gone. Back-off is per key, never per URL: a failing
// host slows down as a whole.
//
// # Politeness keys
//
// Keys maps a URL to its politeness key: its host (the default), its
// registrable domain (eTLD+1 from the public suffix list, so a.example.com
// and b.example.com share one budget), or its resolved IP address (so many
// virtual hosts on one server share one; a name keeps its first address for
// good, so a round-robin host is one key). A crawler passes Keys.Key to the
// frontier and to the robots gate, so that every part paces under one key.
package ratelimit
