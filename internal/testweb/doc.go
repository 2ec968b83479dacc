// Package testweb is a deterministic synthetic web for heed's end-to-end
// tests and for the benchmarks that compare crawlers: many hosts with linked
// pages, robots.txt files, sitemaps and traps, served from loopback, with a
// request log and a judge that decides from that log alone whether a crawl
// was complete and polite.
//
// # The web
//
// New (or NewVirtual, ListenLoopback) generates hosts from a Config. Each
// host has pages linked into a tree from its home page, plus random
// same-host and cross-host links written in many spellings of the same URL
// (relative, absolute, scheme-relative, <base href>, fragments, "%31" for
// "1", an empty "?", swapped query parameters, an upper-case host). A host
// also has pages that only sitemaps list (an index pointing at a gzip XML
// sitemap and a text sitemap), pages that only rel="nofollow" anchors or
// meta-nofollow pages link to, pages under paths its robots.txt disallows
// (by prefix, "*" and "$" rules, with a longer Allow exception), redirects
// into disallowed paths and to pages nothing links to, and optionally a
// Crawl-delay. With four or more hosts the last three are special: one's
// robots.txt redirects, one's is missing (404), and one's answers 503 with
// "Retry-After: 3600", so nothing else may be fetched from it though other
// hosts link to it. Config.Trap adds an infinite calendar.
//
// # Broken hosts
//
// A web of four or more hosts also has, after them, the BrokenHosts hosts
// the real web's faults come from (Config.NoBrokenHosts leaves them out;
// Config.TotalHosts counts them): a robots.txt answering 503 with
// Retry-After as an HTTP-date an hour ahead (HostRobotsRetryDate), a
// robots.txt that never answers until the client goes away
// (HostRobotsHang), a host refusing connections (HostRefused: Virtual's
// dialer refuses its name with ECONNREFUSED, and nothing listens on its
// Loopback address), pages answering their first request 429 with
// "Retry-After: 1" (HostRateLimited), and pages whose first response is cut
// off mid-body by a TCP reset (HostResetting). Every healthy host's home
// page links to the first pages of each, and of the 503 host, so a crawl
// meets several URLs of every one. Under RFC 9309 an unreachable robots.txt
// (503, a hang, a refused connection) is a complete disallow: only
// robots.txt may be requested there, and not again before its Retry-After.
// The pages that fail once are served on the next request: a complete
// crawler tries again, after the host's Retry-After. Which pages have
// failed is kept with the Log, so Log.Reset starts them over. Closing a
// Virtual or Loopback ends the hanging responses; nothing is left behind.
//
// # Ground truth and judgement
//
// Web.Truth lists, for given seeds, the URLs a complete polite crawler
// requests (Reachable, with SitemapOnly among them) and those it must not
// (Disallowed, NofollowOnly), with link depths and per-host request counts
// (a failure and a retry for each page that fails once; nothing for the
// refused host). Every request the server answers is recorded in a Log;
// Truth.Analyze turns the log into a Report: coverage (by requests
// answered), robots and politeness violations (a host's delay, and its
// Retry-After, capped by the crawler's maximum delay), duplicate fetches
// after Canonical normalisation, failed requests and retries (at most
// AnalyzeOptions.Retries per URL), fetches past an unreachable robots.txt,
// nofollow-only fetches, makespan against the ideal, and Report.Check says
// in one error what went wrong.
//
// # Hostile hosts
//
// NewHostile serves, beside an optional normal web, hosts that each play one
// Scenario a crawler must survive: drip-fed and hanging responses, a host
// that never answers, compression bombs, endless sitemap chains, a link
// flood, deep nesting under a nofollow meta tag, lying redirects,
// robots.txt files that are gzip-encoded, UTF-16, grouped unusually,
// redirected through a slow host or stale behind a 429, redirects to
// private addresses, and endlessly repeating paths. Each HostileHost says
// what a polite, safe crawler must request there (Required, Budget) and
// Hostile.Analyze judges a crawl from the log and from the dials Hostile's
// dialer refused (ForeignDials): nothing ever leaves loopback.
//
// # The changing web
//
// NewChanging (or NewChangingVirtual, ListenChangingLoopback) generates a
// web whose pages change over time, for judging continuous crawling, from a
// ChangingConfig (TypicalChangingConfig turns every feature on). Each host's
// home page links to its content pages /p/{k}; each page changes as a
// Poisson process of its own rate λ, spread log-uniformly between the
// configured bounds, some never; the version is in its text. Most pages send
// a true strong or weak ETag and a Last-Modified and answer 304 as RFC 9110
// §13 says (If-None-Match, by weak comparison, before If-Modified-Since);
// some send none; some lie (a Last-Modified always now, an ETag new with
// every response) and never answer 304. Pages go (404 or 410) or move (301
// to /m/{k}, where they carry on changing) at scheduled times; hosts grow,
// new pages appearing on their home pages; /sitemap.xml gives a <lastmod>
// that is true on some hosts and always now or random on others;
// robots.txt has a Crawl-delay and may begin to disallow a path at a set
// time. The schedule is generated lazily, deterministically from the seed,
// relative to Start, on the clock the config gives (real time by default,
// a test's fake clock otherwise), so the same config makes the same web
// whatever is asked of it in what order. Pages, Page, VersionAt, Changes and
// Allowed expose the ground truth. The handler logs each request on the
// web's clock, with whether it was conditional and the bytes sent.
//
// ChangingWeb.Judge computes from that log, over a window, the
// time-averaged freshness of the crawler's copy (a page's copy is fresh
// while the version last received is the current one; a 304 keeps the copy
// as it was) and compares it, host by host at the crawler's own fetch
// count, with revisiting every page alike and with the offline optimum of
// Cho and Garcia-Molina (OptimalFrequencies: maximise Σ F(λᵢ, fᵢ), F(λ, f)
// = (1 − e^(−λ/f))·f/λ, subject to Σ fᵢ = the budget), and with the
// optimum at the host's full politeness budget. The FreshnessReport also
// counts the changes the crawler's fetches found (new, changed, unchanged,
// gone, moved), the share of revisits with validators that were
// conditional, the bytes sent against unconditional refetches, new pages'
// discovery delays, and politeness and robots.txt violations;
// FreshnessReport.Check holds it to FreshnessTargets.
//
// # Serving
//
// NewVirtual serves every host from one httptest.Server; its DialContext,
// Transport and Client map the host names to it (and refuse HostRefused),
// so a crawler under test needs only its http.Client replaced.
// ListenLoopback gives every host its own address in 127.0.0.0/8 (see
// LoopbackAddr), for crawlers in other processes; HostRefused's address has
// no listener.
package testweb
