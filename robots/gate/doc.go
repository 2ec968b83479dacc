// Package gate is heed's robots.txt gate: for every URL a crawler is about
// to fetch it answers whether the site's robots.txt lets it, fetching and
// caching robots.txt per authority (scheme, host and port) as RFC 9309
// §2.3–2.4 describes. Package robots, the parser and matcher, reads the
// files; the gate decides what a fetch's answer means, when to fetch again
// and under whose turn.
//
//	g, err := gate.New(gate.Config{Agent: "heedbot", Get: get})
//	v, err := g.Check(ctx, u)    // fetches u's robots.txt first if it must
//	v.Allowed                    // may u be fetched now?
//	v.RetryAt                    // robots.txt unreachable: put u aside until then
//	v.Entry                      // the outcome, rules, Crawl-delay, sitemaps
//
// The gate has no HTTP client of its own. Config.Get makes each request,
// without following redirects, and returns the body decompressed and
// decoded to UTF-8; a crawler passes its page fetcher, so that robots.txt
// travels the same road as its pages: same transport, User-Agent, address
// checks, header timeout and recording (heed's crawler does, see
// crawler.RobotsEntry).
//
// # What an answer means
//
//   - 2xx: the first robots.MaxSize bytes of the body are parsed and the
//     rules for the gate's agent apply (OutcomeOK).
//   - Redirects (301, 302, 303, 307, 308) are followed, even to other
//     hosts, up to MaxRedirects; the rules found apply to the original
//     authority. More redirects, a redirect to a non-HTTP URL, any other
//     3xx and any 4xx but 429 mean there is no robots.txt: everything is
//     allowed (OutcomeUnavailable).
//   - 429, 5xx, timeouts, DNS and connection errors make robots.txt
//     unreachable: everything is disallowed (OutcomeUnreachable) until a
//     retry, scheduled with exponential back-off (Config.RetryMin doubling
//     up to Config.RetryMax), and not before the Pacer lets the host be
//     asked again (see Release: that is where a Retry-After takes effect).
//     Verdict.RetryAt says when, so a crawler can put the URL aside instead
//     of dropping it. If the gate holds an earlier copy of robots.txt it
//     keeps using it (OutcomeStale); if robots.txt stays unreachable with
//     no copy for Config.AssumeAllowAfter (30 days), everything is allowed
//     (OutcomeAssumedAllow) while retries go on.
//   - Results are cached for Config.TTL (24 h, RFC 9309 §2.4), less if the
//     response's Cache-Control says max-age or no-store/no-cache, but never
//     less than Config.MinTTL: a robots.txt that forbids caching is fetched
//     again after MinTTL rather than before every page, which would double
//     the requests a site receives. The cache is an LRU bounded by
//     Config.CacheSize authorities and Config.CacheBytes of rules; expired
//     entries are refetched lazily, by the next Check.
//
// A robots.txt that cannot be fetched is an outcome, recorded with its
// cause in Entry.Err, never an error of Check, which fails only for a URL
// that is not absolute http(s) or when its context ends.
//
// # Pacing
//
// Every request of a fetch, each redirect hop included, is paced like a
// page request through a Pacer, under its own host's key (Config.Key), so
// robots.txt counts against the host's politeness budget, and every answer
// is reported to the Pacer's Release, so a host answering robots.txt with
// 429 or 503 slows down, or pauses for its Retry-After, for its pages too.
// Config.Timeout applies to each request once it may start, never to the
// wait for the Pacer. Check and Entry use Config.Pacer; CheckWith takes the
// Pacer per call, for a crawler whose permission to ask a host belongs to
// the caller: heed's crawler passes a Pacer bound to the worker's lease of
// the URL's key, so that a request to that key goes at once under the lease
// and a redirect hop to another key waits for a lease of its own.
//
// # One fetch per authority
//
// However many goroutines ask about one authority, one fetch is in flight;
// the others wait for it, each giving up when its own context ends. The
// fetch runs under the context, and is paced by the Pacer, of the goroutine
// that started it: the waiters' Pacers are not asked. If that context
// ends, nothing is cached and a waiting goroutine fetches in its stead,
// under its own. Verdict.Fetched marks the one caller that made the
// requests, Verdict.Waited the others. If the fetch panics (in Get, the
// Pacer or a key function), the panic is logged and the fetch counts as
// failed with ErrFetchPanicked: robots.txt is unreachable until the next
// retry and no caller hangs.
//
// # Hosts
//
// Unless Config.Host and Config.Key say otherwise, the gate names a host
// as heed's crawler does everywhere, in its frontier and pacing too: the
// canonical host of Authority (lower-cased, punycode, no trailing dot, no
// default port), so that a gate built without them agrees with the crawler
// on which URLs share a robots.txt and a politeness budget.
//
// # Beyond the process
//
// With a Config.Keeper (a crawl's Store), every entry is kept beyond the
// gate's memory and its process: a resumed crawl, or another process of a
// distributed one, reads it back (Verdict.Restored) instead of asking the
// site again while it lasts; a robots.txt request a stopped run made and
// did not see answered is followed by the next only Config.ResumeWait
// later, since its answer may have carried a Crawl-delay. The note that a
// request is about to start is taken back when the Pacer refuses it (a
// worker's lease expired at the last moment): no request was made, and no
// one need wait (EntryReplacer).
//
// # In a crawler
//
// In heed's crawler the gate sits between the frontier and the host's
// pacing (a ratelimit.Policy over the frontier's per-host state), both
// keyed by one function (ratelimit.Keys.Key), with the crawler's page
// fetcher as Get. For each item the frontier hands out, under a lease of
// its host's key:
//
//	v, err := g.CheckWith(ctx, u, pacerOf(lease)) // robots.txt under the lease
//	pol.SetCrawlDelay(lease.Key, &lease.Pace, v.Entry.CrawlDelay, v.Entry.HasCrawlDelay)
//	if v.Fetched {
//		stats.robotsFetches++ // once per fetch
//	}
//	switch {
//	case !v.Allowed && !v.RetryAt.IsZero():
//		fr.Requeue(ctx, lease, out) // robots.txt unreachable: put aside, not dropped
//	case !v.Allowed:
//		fr.Done(it) // disallowed by the site's rules
//	case v.Fetched || v.Waited:
//		// robots.txt may have taken the host's turn: back to the
//		// frontier until the host has rested
//	default:
//		// fetch, pol.Observe, fr.Done with the host's rest
//	}
package gate
