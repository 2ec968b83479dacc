// Package fetch downloads pages for a crawler and finds the links in them.
//
// # Fetching
//
// A Fetcher performs one GET per call with a client built for crawling:
// connect, header and total timeouts (10 s, 15 s, 60 s by default),
// keep-alive pools sized per host, HTTP/2 where the server offers it,
// proxies from the environment and an optional cookie jar. It never follows
// redirects: a 3xx answer comes back as a Page whose Redirect is set, so the
// crawler can send the target through canonicalisation, dedup, robots rules
// and the host's pacing like any other URL. Page.RedirectRequest builds the
// next hop and bounds the chain (ErrTooManyRedirects, ErrRedirectLoop);
// Fetcher.Follow does the whole chain for callers without a frontier.
//
// Bodies are capped (10 MiB by default; Page.Truncated says when more
// existed and was not downloaded). Fetch asks for gzip, deflate and brotli
// and decompresses itself under the same cap, so a compression bomb costs
// no more than an ordinary large page. Text is decoded to UTF-8 from the
// charset in the header, a byte order mark or an HTML <meta>. An Accept
// filter sees the headers before the body and can skip unwanted types
// without downloading them; no HEAD requests are made.
//
// An AddressPolicy keeps a crawl where it belongs: with Fetcher.Addresses
// set, URLs whose host is a loopback, private, link-local (cloud metadata)
// or otherwise non-public IP literal are refused before any request, and
// the default transport resolves names itself and connects only to allowed
// addresses, checking the address it dials. HostClasses tells a crawler the
// classes of its seeds, so that it can allow them.
//
// # Extraction
//
// An Extractor returns the links of a page. A Registry runs the extractors
// registered for a page's media type and merges their links; NewRegistry
// registers HTMLExtractor, which reads a, area, link (alternate, next,
// prev, canonical), iframe and frame elements from the markup's tokens (no
// parse tree, so no nesting depth defeats it), resolves them against
// <base href> and drops non-http(s) and fragment-only links. Page.Document
// parses the tree with goquery for handlers and SelectorExtractor.
// SelectorExtractor builds an extractor from a CSS selector; ExtractorFunc
// adapts any function. Registry.MaxLinks bounds the links of one page
// (DefaultMaxLinks, 10,000); the built-in extractors stop resolving links
// at the bound, so extracting a page costs memory in proportion to its
// body, and Registry.ExtractLimited counts the links dropped.
//
// Page-level robots directives are honoured: rel="nofollow", "ugc" and
// "sponsored" on links, <meta name="robots"> and <meta name="heedbot">, and
// X-Robots-Tag headers, including the agent-scoped "heedbot: nofollow" form.
// Page.Directives reports noindex and nofollow; links that must not be
// followed are marked (Link.Nofollow) and left out of Registry.Extract's
// result. DirectivePolicy turns each source off.
//
// # Sitemaps
//
// ParseSitemap streams XML sitemaps and sitemap indexes, plain-text
// sitemaps, RSS and Atom feeds, gzip-compressed or not, enforcing the
// protocol's limits (50,000 entries, 50 MiB) and its rule that a sitemap
// lists only URLs under its own directory unless a robots.txt of the target
// host names it; nested indexes are the caller's to fetch, like any other
// URL (heed's crawler queues them, so the robots gate and the host's pacing
// see every request). SitemapURLs chooses where to start for an authority.
//
// Of heed's packages, fetch depends on robots (for its definition of a
// product token), robots/gate (for ErrTooManyRedirects, the gate's bound on
// a robots.txt's redirects) and internal/hostid; robots and its gate, the
// earlier stage, never import fetch.
package fetch
