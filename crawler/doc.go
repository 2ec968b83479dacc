// Package crawler is heed's engine: it crawls the web from seed URLs,
// politely, with the parts of heed wired together.
//
//	c, err := crawler.New(crawler.WithMaxPages(100))
//	if err != nil { ... }
//	c.OnPage(func(ctx context.Context, p *crawler.Page) {
//		fmt.Println(p.URL, p.Status, p.Title())
//	})
//	err = c.Run(ctx, "https://example.com/")
//
// # How a URL travels
//
// Every URL, seed, link, redirect target or sitemap entry, enters the
// frontier (package frontier), which canonicalises it, refuses out-of-scope
// and trap-shaped URLs, and has its Store drop duplicates and queue it per
// host. Workers take from the frontier leases of URLs whose host may be
// fetched now, so a worker never waits on one host while another is ready.
// A URL then passes the robots gate (package robots/gate), which fetches,
// caches and obeys its authority's robots.txt, before the fetcher (package
// fetch) downloads it without following redirects, to an address the crawl
// may reach. The extractors find the page's links, which go back to the
// frontier in one batch; a redirect's target does too, so it is checked
// against robots.txt like any URL. A link that the robots.txt the gate
// already holds disallows is not queued at all (but with WithCheckpoint:
// see Reports): the Store records it seen (frontier.Item.SeenOnly) and it
// is reported once, as disallowed; every other URL is checked again,
// against the robots.txt of the time, when a worker takes it. When the lease ends, the host's pacing
// state goes back to the Store with how long the host must rest, as package
// ratelimit's Policy decides.
//
// # Politeness
//
// The defaults are polite and no option turns robots.txt off: one request
// at a time per host, at least a second apart (WithDelay, WithPerHost),
// counted from the previous answer. A robots.txt Crawl-delay can lengthen
// that delay, never shorten it, up to WithMaxDelay. 429 and 5xx answers
// and timeouts back the host off; Retry-After pauses it; a host that keeps
// failing is given up (WithHostFailures). A robots.txt that answers 4xx
// allows everything; one that answers 429 or 5xx, or cannot be reached,
// disallows everything (RFC 9309 §2.3.1), and its URLs are reported as
// errors (WithRobotsWait lets them wait for it instead). Links marked
// nofollow, by rel, robots <meta> or X-Robots-Tag, are not followed
// (WithRespectNofollow). Sitemaps named in robots.txt, or /sitemap.xml, are
// read and their pages crawled within a per-host budget (WithSitemaps,
// WithMaxSitemaps, WithMaxSitemapURLs, WithMaxSitemapDepth). Loopback, private and link-local addresses are
// refused unless the seeds are on them (WithAllowPrivate).
//
// # Options
//
// New takes options; an option left out keeps its default (the Default
// constants), and New refuses a bad value with an *OptionError naming the
// option. One rule says what a value means: zero means zero, or is
// refused. WithDelay(0) is no delay, WithRetries(0) no retry,
// WithMaxRedirects(0) no redirect followed, WithGracePeriod(0) no grace,
// WithMaxSitemapDepth(0) no nested sitemap; where zero of something would
// crawl nothing or has its own option (no workers, no pages, no links, a
// zero timeout or lease), New refuses it and says what to use instead.
// Zero never stands for the default, nor for no limit: a limit is lifted
// with NoLimit, WithMaxPages(NoLimit). The zero value of a struct passed
// whole, a frontier.Canonicalizer, is likewise its package's default.
//
// # Hooks
//
// OnPage, OnHTML, OnScraped, OnError, OnDisallowed and Filter are called
// from the workers: handlers of different pages run concurrently, the
// handlers of one page in registration order (OnPage's, then OnHTML's,
// then OnScraped's), and Run returns only after every handler has
// returned. A hook registered during Run takes effect for the URLs
// handled from then on. OnHTML takes a Selector compiled beforehand by
// CompileSelector, so that a broken selector is an error before the
// crawl. A handler or extractor that panics is recovered, counted and
// reported to OnError; the crawl goes on. Page.Follow and Enqueue add URLs
// from inside a handler, with metadata that travels to their pages
// (Page.Meta). WithExtractor and WithExtractors add or replace link
// extractors per media type.
//
// # Reports
//
// Every URL the crawl meets is reported once, whatever the order in
// which things happen: OnPage for an answer (any status), OnError for a
// URL that failed or was dropped unfetched — its robots.txt unreachable
// (Error.Kind FailedRobotsUnavailable; OnDisallowed is told too, with
// DisallowedUnavailable), its host given up (FailedHostGivenUp), its
// address private (Error.Skipped SkippedPrivateAddress), refused by a
// page limit (Error.Skipped SkippedMaxPages, SkippedMaxPagesPerHost) —
// and OnDisallowed for one robots.txt rules keep out (DisallowedByRules).
// A sitemap is not a page: one read is counted (Stats.Sitemaps), and so is
// one not asked for — its host given up (Stats.SkippedLinks
// SkippedHostGivenUp), WithMaxPages reached before it was claimed — since
// whether it was asked depends on timing; one asked that failed or could
// not be parsed is reported (FailedSitemap, or the fetch's kind).
//
// Each such report is made on the URL's own lease, before the Store
// operation that ends it, so it is made exactly once per run, by the one
// process that held the lease, and with WithCheckpoint it carries its
// checkpoint (a link that robots.txt rules keep out is then queued like
// any, not only marked seen, for the same reason). A URL that is not to
// be fetched is queued all the same, to be handed out at once (its host
// given up) or in its turn (refused by a page limit: the Store marks it
// seen and queues it to be reported, frontier.ErrReported, counted
// against no limit) and reported on its lease, which costs its host no
// rest. So which report a URL gets does not depend on when it was found,
// and no crash, kill -9 or other process of a shared Store can lose it or
// make it twice: the seen mark and the report to make are one Store
// write. The one exception: without WithCheckpoint, a link robots.txt
// rules keep out is reported by the process whose Store operation marked
// it seen, just after it (queued instead, it would cost a shared Store a
// claim and an acknowledgement of its own). A shared Store keeps it
// pending until the crawl tells it the report is made
// (frontier.ReportWriter) and, if the process dies first, hands it to
// another to be reported (frontier.RefusedSeenOnly): never lost, made
// twice only if the process is killed or presumed dead between its report
// and the Store hearing of it, as a page in flight may be fetched twice.
// Twice by two processes, not in one process's records: a URL reported
// under a lease the Store had taken back (frontier.ErrLeaseLost) and then
// handed to the same crawl again is fetched again but not reported again,
// and when the two fetches overlap (a process presumed dead while paused
// mid-fetch, its first fetch ending after it rejoined) the one that ends
// first reports it.
// Stats counts each report once: Stats.SkippedLinks
// SkippedMaxPages and SkippedMaxPagesPerHost count the URLs reported so,
// not each time one is found again (that is SkippedSeen).
//
// Refusals of a URL that does not become one of the crawl's are only
// counted, in Stats.SkippedLinks: out of scope, a duplicate, past
// WithMaxDepth, a trap-shaped path, a Filter's, links past WithMaxLinks,
// and sitemap budgets (WithMaxSitemaps, WithMaxSitemapURLs). These leave
// the URL unseen, and it may still be scheduled when found another way
// (at a smaller depth, as a link rather than a sitemap entry), or it has
// its record already (a duplicate): a record of the refusal would be
// wrong or repeated. The page limits are not so: a URL they refuse is
// refused however it is found, and is reported. A seed refused, but as a
// duplicate, is reported to OnError.
//
// # Revisiting
//
// With WithRevisit the crawl keeps its copy fresh: every page answered is
// queued again, in the same Store operation that ends its lease, with what
// the fetch found (frontier.Visit: validators, content digest, when it was
// fetched and last changed, the revisit policy's estimate of how fast it
// changes) and when the policy says it is next due. A revisit is paced
// like any request of its host, sharing the host's one politeness budget
// with new URLs, and is conditional (If-None-Match, If-Modified-Since)
// where the server sent validators. A 304, or a 200 whose content digest
// is the held copy's, is unchanged — validators that lie cannot make a
// page changed. Handlers read the verdict in Page.Change, what was held
// in Page.Previous and what is held now in Page.Held. A page that
// redirects is not revisited (its target is crawled as a new URL), one
// gone (404, 410) is asked again every Max until GoneLimit answers in a
// row, and one robots.txt now disallows is reported once and dropped. The
// policy's state lives in the Store, each page's in its Visit and each
// host's beside its pacing state (frontier.Lease.Revisiting), so a resumed
// crawl, and every process of a shared one, goes on from it.
//
// # State
//
// The crawl's state lives in a frontier.Store: in memory by default; with
// WithStore, on disk (frontier/pebblestore: Run resumes after any stop) or
// in Redis (frontier/redisstore: many processes share one crawl, and a host
// is leased to one of them at a time). WithCheckpoint keeps a program's own
// output in step with it, for records written exactly once across crashes.
// A Store that fails stops the crawl with its error.
//
// # Watching a crawl
//
// Stats is readable at any time, live during Run and as the summary after
// it (its String method prints it for people; package crawler/metrics
// exports it to Prometheus); Host tells how the running crawl reads one
// host's robots.txt and how fast it may fetch from it. Both take a
// context: during Run they ask the Store, which may be a Redis server. WithWARC archives
// every exchange. Logging goes to the *slog.Logger given with WithLogger,
// and is discarded by default.
package crawler
