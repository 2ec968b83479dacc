// Package ratelimit decides how long a host must rest between requests, so
// that every site sees at most one request per delay, however many workers —
// or processes — the crawler runs.
//
// Policy is that decision and nothing else: given a host's pacing state (a
// frontier.HostState, which the frontier and its Store own, persist and
// share) and the answer to a request, it updates the state and says how long
// the host rests. heed's crawler uses it this way, so that one owner — the
// frontier — knows when each host may next be fetched, across restarts and
// across the processes of a distributed crawl. A HostLimiter applies the same
// Policy with state of its own, in token buckets, for programs that pace
// without a frontier.
//
// The delay between two requests to one key is
//
//	min(MaxDelay, max(MinDelay, Crawl-delay, AdaptiveFactor×response time, back-off))
//
// so a site can slow the crawler down through robots.txt or by failing, but
// never speed it up beyond what the user configured, and a site asking for an
// absurd Crawl-delay is crawled at MaxDelay instead (the clamp is logged).
//
// With one request in flight per key (the default), Observe restarts the
// delay when a response arrives: the next request starts at least the delay
// after the previous answer, so however late the server saw the previous
// request, it never sees two closer than the delay. With more in flight,
// the delay separates request starts.
//
// # Back-off
//
// Observe feeds each response back into the limiter. A 429 or 503 with a
// Retry-After header (seconds or an HTTP date, capped by MaxRetryAfter) pauses
// the key until then. A 429 or 503 without it, any other 5xx, a timeout or a
// network error doubles the key's delay (at least 1 s, plus jitter, up to
// MaxDelay); each success halves the extra delay until it is gone. Back-off
// is per key, never per URL: a failing host slows down as a whole.
//
// # Working with a scheduler
//
// With a HostLimiter, a scheduler that must never park a worker on one host
// while another is ready asks ReadyAt for the earliest time a request to a key may start and
// hands the key out only when that time has come. The worker then calls
// Wait, which returns at once because the key is ready, makes its request,
// reports it with Observe and releases its in-flight slot with Done:
//
//	key := lim.Key(u)
//	if err := lim.Wait(ctx, key); err != nil { ... } // takes the token and a slot
//	resp, err := client.Do(req)
//	lim.Observe(key, status, header, rtt, err)
//	lim.Done(key)
//	next := lim.ReadyAt(key) // already reflects the token just taken
//
// Wait also works on its own, blocking until the key is ready; Acquire
// wraps Wait, Observe and Done for the robots gate (HostLimiter satisfies
// robots.Pacer).
//
// # Politeness keys
//
// Key maps a URL to its politeness key: its host (the default), its
// registrable domain (eTLD+1 from the public suffix list, so a.example.com
// and b.example.com share one budget), or its resolved IP address (so many
// virtual hosts on one server share one; a name keeps its first address for
// good, so a round-robin host is one key). Keys computes them without a
// limiter. A HostLimiter forgets the keys of idle hosts after IdleTimeout, so
// memory stays proportional to the hosts being crawled.
//
// All time comes from Config.Clock, so tests drive the limiter with a fake
// clock and never sleep.
package ratelimit
