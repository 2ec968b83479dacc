// Package frontier decides what heed fetches next. It canonicalises URLs,
// drops duplicates and links outside the crawl's scope or limits, keeps one
// queue per politeness key (host), FIFO but for revisits, which wait for
// their due time, and hands a worker a lease of an
// item whose key may be fetched now, so that a crawl of many slowly paced
// hosts keeps every worker busy. Everything a crawl must not forget lives
// in a Store: in memory, on disk so that a crawl resumes after any stop, or
// in Redis so that many processes share one crawl.
//
// # Canonical URLs
//
// Canonical and CanonicalRef turn the many spellings of a URL into one
// (scheme and host case, IDN to punycode, default ports, dot segments,
// percent-encoding, fragments, empty queries; optionally sorted or
// stripped query parameters, see Canonicalizer). Only http and https URLs
// are accepted; others are rejected with an error wrapping ErrScheme,
// ErrRelative, ErrHost, ErrPort or ErrTooLong. A URL already canonical is
// returned without allocating. The politeness key of a URL is its
// host[:port] unless Config.Key says otherwise (ratelimit.Keys.Key groups
// hosts by registrable domain or IP address).
//
// # Admission
//
// Add takes one item, AddAll a page's links in one Store call; AddSeed and
// AddSeeds take seeds, which also define the crawl's scope. Each item is
// checked in this order, the first failure giving its error:
//
//   - depth: deeper than Config.MaxDepth, or negative (ErrDepth);
//   - canonical form (ErrScheme, ErrRelative, ErrHost, ...);
//   - pathological path, the shape of crawler traps such as /a/a/a/ or
//     paths of more than 32 segments (ErrPathological);
//   - scope: the seeds' hosts by default, their registrable domains
//     (ScopeSeedDomains), anything (ScopeAny) or Config.InScope
//     (ErrScope); AddScope widens it by a seed's redirect target;
//   - then, in the Store and atomically with its counters: the page and
//     sitemap limits of Config.Limits (ErrLimit, ErrHostLimit,
//     ErrSitemapLimit) and duplicates (ErrSeen): each canonical URL is
//     scheduled at most once per crawl. A URL of a key given up (GiveUp)
//     is scheduled whatever the limits, to be handed out at once and
//     reported, not fetched.
//
// Errors are sentinels for the crawler to count with errors.Is. Limits count
// items scheduled, not fetched: a page later disallowed or failing still
// counts. LimitReached reports that the Store has refused a page for
// Limits.MaxPages, after which queued sitemaps can only list pages that
// would be refused too.
//
// # The Store
//
// A Store keeps the crawl's state: the seen-set, one queue per key, the
// leases of items handed out, each key's pacing state (ratelimit.HostState) and
// counters, the crawl's metadata (the seeds' scope, under SetMeta) and a
// checkpoint. Each call is atomic: no URL is ever marked seen without being
// queued, and a failed call changes nothing. The Frontier itself keeps only
// its configuration, the scope's names and one timer. A Store's errors end
// the crawl; the Frontier returns them wrapped in ErrStore.
//
// MemoryStore, the default, keeps it in memory for one process. A queued
// URL costs a 48-byte record plus ring slack beside its string, a seen URL
// an 8-byte hash (MemoryStore.ExactSeen keeps strings instead, with no
// chance of two URLs colliding), a URL queued as a revisit about 180 bytes
// with its Visit, and a key with work a few hundred bytes;
// BenchmarkMemoryPerURL and BenchmarkMemoryPerRevisit measure the totals. Package frontier/pebblestore
// keeps the state on disk, so that a crawl resumes after a stop or a crash;
// package frontier/redisstore keeps it in Redis, shared by every process of
// a distributed crawl. Package frontier/storetest is the contract every
// Store must meet, as a test suite each store runs on itself.
//
// # Leases
//
// Next returns a Lease: the item, its key's ratelimit.HostState as the Store had it,
// and a token that fences the lease. The worker owns it until it ends it
// with exactly one of Done (the item is finished, whatever happened to the
// fetch) or Requeue (the item goes back to the front of its key's queue, with
// its history — Retries, Redirects, Meta, Visit — neither a duplicate
// nor counted again). Ending a lease that was already ended, or that the
// Store took back, returns ErrLeaseLost. A worker loops:
//
//	for {
//		lease, err := fr.Next(ctx)
//		if err != nil {
//			return err // ErrExhausted: the crawl is over
//		}
//		h := lease.Pace // the key's pacing state, to update
//		resp, rtt, err := fetch(ctx, lease.URL)
//		a := ratelimit.Answer{Failure: fetch.Classify(resp.StatusCode, err), Header: resp.Header, RTT: rtt}
//		rest := policy.Observe(lease.Key, &h, time.Now(), a)
//		fr.AddAll(ctx, links(lease, resp)) // lease.Child(link) for each link
//		fr.Done(ctx, lease, frontier.Outcome{Pace: h, Rest: rest})
//	}
//
// A worker whose slot went to fetching the host's robots.txt, or whose
// robots.txt is unavailable for now, ends the lease with Requeue and a Rest
// instead. NextKey leases a key without an item, for a request that must be
// paced with the key's pages but is not one of them (a robots.txt redirect
// to another host).
//
// No broken host holds a crawl open. A key can be closed: given up
// (GiveUp: it refuses its URLs from then on), or closed until
// ratelimit.HostState.ClosedUntil by the worker that found its robots.txt
// unreachable. Next hands out a closed key's items at once, whatever its
// pace, marked so (Lease.Closed), for the worker to report each and end its
// lease with Done without a request — one Store operation per item, so that
// each is reported exactly once, even across a crash. The key's pace is
// left as it was, for its next request once it opens again. Config.Claim
// sets how many leases one key may have at once (PerHost, default 1), runs
// of a key ready again at once (Affinity), and, for stores shared between
// processes, how long a lease lasts before the Store may hand its item to
// another worker (Lease).
//
// # Pacing: token buckets, Outcome.Rest and ratelimit.HostState
//
// The Frontier and its Store own when a key may next be fetched: each key
// is paced by a token bucket, a ratelimit.Bucket (a golang.org/x/time/rate
// Limiter of burst 1) kept with the key's queue, whose one token is the
// key's permission to start a request; the key is ready when the token is
// there. ratelimit.HostState.NextAllowed mirrors when it will be, for the
// Store to persist, share and report. What they do not decide is how long
// a key rests; that is the caller's pacing policy, package ratelimit,
// which reads the ratelimit.HostState a lease carries (Delay, Crawl-delay,
// back-off, response time, Retry-After pause), updates it from the answer
// and returns a rest. The worker hands both back in the Outcome; the Store
// records the new ratelimit.HostState and takes the key's token when it
// records the outcome, at the rate Every(Rest), so that the key rests Rest
// from then. So with one lease per key — "a delay from the answer" — a
// host's next request starts a full rest after its previous answer,
// however late the server saw the request. With PerHost above one, each
// claim also takes the token, at the rate Every(ratelimit.HostState.Delay),
// so that concurrent requests to a key start at least that far apart; PerHost
// bounds the requests in flight, never a burst. A rest taken while the
// token is not back yet (a Retry-After pause after such a claim) slows the
// bucket's refill to end no sooner than Rest from then, and never brings it
// forward.
//
// A bucket holds one token, however long its key was idle; a Store that
// reopens rebuilds each key's bucket from its NextAllowed, so a restart
// grants no burst either. redisstore keeps the same bucket, with rate's
// arithmetic, in Redis on Redis's clock.
//
// # Waiting and waking
//
// Next never hands out a key before its bucket has its token
// (NextAllowed), nor an item before its Due, and never leaves a worker
// waiting on one key while another is ready. Keys are served earliest
// NextAllowed first — keys never fetched before all others, keys ready at
// once round-robin, a key whose first item is a revisit due later at the
// later of its NextAllowed and that Due — and a key's items in order of
// Due, new URLs in FIFO order; Affinity
// lets a key that is ready again as soon as its lease ends keep a warm
// connection for a few items. When no key is ready, Next blocks until the
// earliest time a key may be claimed, the first revisit's Due included
// (one timer, on Config.Clock, shared by all waiting workers: no polling), or until Add, Done, Requeue, GiveUp or Close may have changed
// the answer, or ctx ends. Items and leases that change in other processes
// do not wake it: with a shared Store, Config.Poll makes it ask again
// periodically.
//
// Next returns ErrExhausted only when nothing is queued and nothing is
// leased anywhere, since a leased page may still add links; a key that is
// only resting keeps the crawl alive, and so does a revisit due later: a
// crawl that revisits goes on until it is stopped. Close makes Next and Add return
// ErrClosed; leases can still end.
//
// # Revisits
//
// A crawl that keeps its copy fresh fetches each page again and again. The
// worker that fetched a page ends its lease with Done and an
// Outcome.Revisit: the lease's item, with the Visit its fetch found
// (Item.Visit: when it was fetched and last found changed, the validators
// and digest of the version held, the consecutive 404s, and the state of
// the revisit policy's estimator, package frontier/revisit) and the Due of
// its next fetch. The Store queues it again in the same atomic step as the
// Done, with its checkpoint: the URL stays seen — Add refuses it with
// ErrSeen — and is not counted again against the limits. The next lease of
// it carries the Visit, for the worker to make a conditional request
// (If-None-Match, If-Modified-Since) and judge whether the page changed.
// A Done without a Revisit ends the URL for good, as in a crawl that does
// not revisit; a Revisit of another URL is refused with ErrRevisit.
//
// Item.Due is when an item may be handed out at the earliest. Add stamps
// new URLs with the Frontier's clock, so new URLs and revisits share one
// order: a key's items are handed out by Due, then in the order they were
// queued — a revisit due at 10:00 goes before a link found at 10:05 and
// after one found at 9:55 — and neither kind starves the other; how a
// host's requests are shared between them beyond that order is the revisit
// policy's, through the Dues it sets. Revisits take their place in each
// key's pacing: a key may be claimed once its NextAllowed has come and its
// first item is due, whichever is later, and Next waits for the first key
// to get there.
// A revisit waiting for its Due counts as queued (Counts.Queued; its key
// as Resting), and the crawl is not exhausted while one waits. A closed
// key (given up, or ClosedUntil) hands out all its items at once, revisits
// due later included, to be reported. Requeue puts a revisit back with its
// Visit and Due. A Store that persists keeps revisits across a reopen and
// a crash (frontier/storetest checks it), so that a resumed crawl keeps
// its schedule.
//
// # Resume
//
// A crawl started on a Store that holds an earlier run's state carries on
// from it: the queues, the seen-set, the limits' counts, keys given up and
// each key's ratelimit.HostState are the Store's. What the Frontier adds is the
// scope: it stores the seeds' hosts or domains, and those AddScope added,
// as metadata, and Resume loads them, so that links found after the
// restart are judged as before. Call Resume before adding seeds: the scope
// stored is the Frontier's own, which a seed added first would replace. A
// Store that persists rebuilds each key's bucket from its NextAllowed and
// makes it wait a full Delay from the reopening besides, since a request
// may have been under way when the process stopped, and hands out again
// the items that were leased then. Outcome.Checkpoint is stored in
// the same atomic step as the lease's end, so a caller's output offset and
// the crawl's progress agree after a crash; Store.Checkpoint reads it back.
//
// # Concurrency and time
//
// All Frontier methods are safe for concurrent use; Stores are called
// without the Frontier's lock held. Time comes from Config.Clock
// (a clock advanced by hand in tests), so scheduling tests are exact and
// never sleep.
package frontier
