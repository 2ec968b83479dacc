// Package ratelimit decides how long a host must rest between requests, so
// that every site sees at most one request per delay, however many workers —
// or processes — the crawler runs.
//
// Policy is that decision and nothing else: given a host's pacing state (a
// HostState, which the frontier and its Store own, persist and
// share) and the answer to a request, it updates the state and says how long
// the host rests. heed's crawler uses it this way, so that one owner — the
// frontier — knows when each host may next be fetched, across restarts and
// across the processes of a distributed crawl. The package keeps no pacing
// state of its own.
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
// rest its delay from the answer: the next request starts at least the delay
// after the previous answer, so however late the server saw the previous
// request, it never sees two closer than the delay. With more in flight,
// the delay separates request starts (the frontier's claims).
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
