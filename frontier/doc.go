// Package frontier decides what heed fetches next: it canonicalises URLs,
// drops duplicates and out-of-scope links, keeps one FIFO queue per
// politeness key (host), and hands out URLs whose host may be fetched now,
// so a crawl of many slowly paced hosts keeps every worker busy.
//
// # Canonical URLs
//
// Canonical and CanonicalRef turn the many spellings of a URL into one
// (scheme and host case, IDN to punycode, default ports, dot segments,
// percent-encoding, fragments, empty queries; optionally sorted or
// stripped query parameters, see Canonicalizer). Only http and https URLs
// are accepted; other URLs are rejected with an error wrapping ErrScheme,
// ErrRelative, ErrHost, ErrPort or ErrTooLong. A URL already canonical is
// returned without allocating.
//
// # Scheduling
//
// A Frontier keeps, per politeness key, a queue in its Store and an entry
// on a ready-heap ordered by the time the key may next be fetched: the
// later of the Pacer's ReadyAt (rate limit, Crawl-delay, back-off) and any
// Defer time. A worker loops:
//
//	for {
//		it, err := fr.Next(ctx) // it.Key may be fetched now; it is busy until Done/Defer
//		if err != nil {
//			break // ErrExhausted: the crawl is over
//		}
//		if robotsWasFetchedForThisItem {
//			fr.Defer(it, limiter.ReadyAt(it.Key)) // the slot went to robots.txt
//			continue
//		}
//		// fetch, extract, then for each link:
//		fr.Add(ctx, it.Child(link))
//		fr.Done(it)
//	}
//
// Next never hands out a key before its ready time and never leaves a
// worker waiting for one key while another is ready: it blocks only when
// no key is ready, until the earliest one is (a timer on the injected
// Clock) or until Add, Done, Defer or Close change the picture. Keys ready
// at the same time are served round-robin. A key is busy while PerHost
// (default 1) of its items are in flight. Hosts whose robots.txt is being
// fetched hold only their own slot, so they do not block one another.
//
// Next returns ErrExhausted only when every queue is empty and no item is
// in flight, since an in-flight page may still add links.
//
// # Admission
//
// Add checks, in order: depth (MaxDepth), canonical form, scope (seed
// hosts by default, or registrable domains, anything, or a custom func;
// AddSeed defines the seed set), page limits (MaxPages, MaxPagesPerHost,
// counting scheduled page items, not fetches), and duplicates: each
// canonical URL is scheduled at most once per Frontier. Rejections are
// sentinel errors (ErrDepth, ErrScope, ErrLimit, ErrHostLimit, ErrSeen...)
// for the crawler to count with errors.Is.
//
// # Storage
//
// The Store interface holds what grows with the crawl, the seen-set and the
// queues; the Frontier keeps only per-key scheduling state (the heap,
// in-flight counts, limits, timers), which grows with the number of active
// hosts. MemoryStore is the in-memory Store: a 40-byte record per queued
// URL plus buffer slack and a 64-bit hash per seen URL. With a million
// URLs queued at 10 to 1,000 per host, the Frontier and MemoryStore
// together use 58–76 bytes per URL beyond the URL string itself; each host
// with queued items adds about 230 bytes, which dominates when hosts have
// one or two URLs each (see BENCHMARKS.md). The seen-set stores hashes, so
// two URLs may collide (probability about n²/2⁶⁵ for n URLs);
// MemoryStore.ExactSeen trades memory for exactness.
// Because the scheduler only pushes, pops and marks through Store, an
// on-disk (pebble) or Redis store can follow without scheduler changes.
//
// # Concurrency and time
//
// All Frontier methods are safe for concurrent use. Time comes from
// Config.Clock (internal/fakeclock in tests), so scheduling tests are
// exact and never sleep.
package frontier
