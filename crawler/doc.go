// Package crawler is heed's engine: it crawls the web from seed URLs,
// politely, with the parts of heed wired together.
//
//	c, err := crawler.New(crawler.WithMaxPages(100))
//	if err != nil { ... }
//	c.OnPage(func(ctx context.Context, p *crawler.Page) {
//		doc, _ := p.Document() // goquery, parsed on first use
//		fmt.Println(p.URL, p.Status, doc.Find("title").Text())
//	})
//	err = c.Run(ctx, "https://example.com/")
//
// # How a URL travels
//
// Every URL, seed, link, redirect target or sitemap entry, enters the
// frontier (package frontier), which canonicalises it, drops duplicates and
// out-of-scope URLs, and queues it per host. Workers take from the frontier
// only URLs whose host may be fetched now, so a worker never waits on one
// host while another is ready. A URL then passes the robots gate (package
// robots), which fetches, caches and obeys its authority's robots.txt, and
// the host's token bucket (package ratelimit), before the fetcher (package
// fetch) downloads it without following redirects. The extractors find the
// page's links, which go back to the frontier; a redirect's target does too,
// so it is checked against robots.txt like any URL.
//
// # Politeness
//
// The defaults are polite and no option turns robots.txt off: one request
// at a time per host, at least a second apart (WithDelay, WithPerHost),
// counted from the previous answer. A robots.txt Crawl-delay can lengthen
// that delay, never shorten it, up to WithMaxDelay. 429 and 5xx answers
// and timeouts back the host off; Retry-After pauses it. A robots.txt that
// answers 4xx allows everything; one that answers 429 or 5xx, or cannot be
// reached, disallows everything (RFC 9309 §2.3.1), and its URLs are skipped
// and reported (WithRobotsWait lets them wait for it instead). Links marked
// nofollow, by rel, robots <meta> or X-Robots-Tag, are not followed
// (WithRespectNofollow). Sitemaps named in robots.txt, or /sitemap.xml, are
// read and their pages crawled (WithSitemaps).
//
// # Hooks
//
// OnPage, OnError, OnDisallowed and Filter are called from the workers:
// handlers of different pages run concurrently, the handlers of one page in
// registration order, and Run returns only after every handler has
// returned. A handler that panics is recovered, counted and reported to
// OnError; the crawl goes on. Enqueue adds URLs from inside a handler.
// WithExtractor and WithExtractors add or replace link extractors per media
// type.
//
// # Watching a crawl
//
// Stats is readable at any time, live during Run and as the summary after
// it; Host tells how the running crawl reads one host's robots.txt and how
// fast it may fetch from it. Logging goes to the *slog.Logger given with
// WithLogger, and is discarded by default.
package crawler
