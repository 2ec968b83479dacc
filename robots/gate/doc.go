// Package gate is heed's robots.txt cache: for every URL a crawler is about
// to fetch it answers whether the site's robots.txt lets it, fetching and
// caching robots.txt per authority as RFC 9309 §2.3–2.4 describes. It reads
// the files with package robots, the parser and matcher.
package gate
