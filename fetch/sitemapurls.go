package fetch

import (
	"net/url"
	"strings"
)

// DefaultSitemapDepth bounds how many sitemap index levels a crawler
// follows below a root sitemap. The protocol allows one; some sites nest
// further.
const DefaultSitemapDepth = 4

// SitemapURLs returns the sitemaps to read for one authority: the Sitemap
// lines of its robots.txt (resolved against authorityBase, http(s) only,
// duplicates removed, order kept) or, when there are none and tryDefault is
// set, authorityBase's /sitemap.xml. A crawler calls it once per authority,
// after the robots gate has fetched robots.txt, and reads each with
// ParseSitemap, passing the robots.txt URL as SitemapOptions.RobotsURL
// when the list came from it.
func SitemapURLs(authorityBase *url.URL, robotsSitemaps []string, tryDefault bool) []string {
	if authorityBase == nil {
		authorityBase = &url.URL{}
	}
	var out []string
	seen := make(map[string]bool)
	for _, s := range robotsSitemaps {
		u, err := authorityBase.Parse(strings.TrimSpace(s))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		if k := u.String(); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if len(out) == 0 && tryDefault && authorityBase.Host != "" {
		out = append(out, (&url.URL{Scheme: authorityBase.Scheme, Host: authorityBase.Host, Path: "/sitemap.xml"}).String())
	}
	return out
}
