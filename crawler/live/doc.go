// Package live serves a live page of a running crawl: an http.Handler a
// program mounts (the crawl command does with -ui) that shows, updated
// every couple of seconds without reloading, what the crawl is doing and
// what it does to each host.
//
// The page at / is one small HTML document with its script and style
// embedded in the binary (go:embed): it loads nothing from elsewhere and
// works offline. Its data is JSON under /api/: status (state, uptime,
// pages/s over the last minute and on average, in flight, hosts due now
// and resting, alerts, latency, freshness, process), chart (outcomes per
// second over the last hour), hosts (the host table, filtered, sorted and
// paged on the server), host (one host's politeness journal), frontier
// (the queued URLs by when they fall due over the next hour, and the one
// overdue longest, asked of the Store through Crawler.Frontier at most
// every five seconds), errors (by kind with an example) and log (the last
// fetches). Everything crawled is
// put on the page as text, never as markup.
//
// A Recorder, attached to a crawler.Crawler before Run, keeps what the
// crawler's hooks tell it (OnRequest, OnRobots, OnPage, OnError): the
// outcome of each second, and per host the load imposed against the load
// its delay allows, its recent 429s and 5xx, its robots.txt, its
// politeness journal and, for a revisiting crawl, its freshness debt
// against the politeness cap. The queue's figures, each host's pacing and
// queued URLs, and the frontier are read from the crawler itself (Stats,
// Host, Frontier), whose Store owns them.
//
// NewJobHandler serves the view of a crawl shared by several processes (a
// -redis job) from what its Store says, without crawling, with the same
// frontier panel and /api/frontier for the whole job when given the
// Store's DueCounts (JobOptions.Frontier).
//
// Controls — pause, resume, stop — are POSTs that need the Handler's
// token in the X-Heed-Token header and come from the page's own origin
// (Sec-Fetch-Site or Origin): a page elsewhere cannot drive them.
package live
