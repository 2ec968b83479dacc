package testweb

import (
	"bytes"
	"compress/gzip"
	"container/heap"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/temoto/robotstxt"
	"golang.org/x/net/html"
)

// naiveCrawler is a small single-threaded crawler written independently of
// the generator (it reads robots.txt with temoto/robotstxt and HTML with
// x/net/html) to prove that the ground truth matches what the server serves.
// Its switches make it rude in the ways the analysis must catch.
type naiveCrawler struct {
	t      *testing.T
	client *http.Client

	obeyRobots   bool
	obeyNofollow bool
	useBase      bool
	canonical    bool // dedupe by Canonical; otherwise by the resolved URL without fragment
	sitemaps     bool
	maxDepth     int // 0: unlimited

	robots  map[string]*robotstxt.RobotsData
	best    map[string]int // dedupe key → smallest depth seen
	fetched map[string]bool
	depth   map[string]int // canonical URL → depth it was fetched at
	queue   depthQueue
}

func newNaiveCrawler(t *testing.T, client *http.Client) *naiveCrawler {
	c := &naiveCrawler{t: t, obeyRobots: true, obeyNofollow: true, useBase: true, canonical: true, sitemaps: true}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.client = client
	return c
}

func (c *naiveCrawler) crawl(seeds []string) {
	c.robots = make(map[string]*robotstxt.RobotsData)
	c.best = make(map[string]int)
	c.fetched = make(map[string]bool)
	c.depth = make(map[string]int)
	for _, s := range seeds {
		c.enqueue(s, 0)
	}
	for c.queue.Len() > 0 {
		it := heap.Pop(&c.queue).(queued)
		key := c.key(it.url)
		if c.fetched[key] || it.depth > c.best[key] {
			continue
		}
		c.fetched[key] = true
		c.visit(it)
	}
}

func (c *naiveCrawler) key(u string) string {
	if c.canonical {
		k, err := Canonical(u)
		if err != nil {
			c.t.Fatalf("canonical %q: %v", u, err)
		}
		return k
	}
	k, _, _ := strings.Cut(u, "#")
	return k
}

func (c *naiveCrawler) enqueue(raw string, depth int) {
	u, err := url.Parse(raw)
	if err != nil {
		c.t.Fatalf("bad URL %q: %v", raw, err)
	}
	if c.obeyRobots || c.sitemaps {
		c.readRobots(strings.ToLower(u.Host))
	}
	if c.maxDepth > 0 && depth > c.maxDepth {
		return
	}
	key := c.key(raw)
	if d, ok := c.best[key]; ok && d <= depth || c.fetched[key] {
		return
	}
	c.best[key] = depth
	heap.Push(&c.queue, queued{url: raw, depth: depth})
}

func (c *naiveCrawler) get(u string) (int, http.Header, []byte) {
	resp, err := c.client.Get(u)
	if err != nil {
		c.t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("GET %s: reading body: %v", u, err)
	}
	return resp.StatusCode, resp.Header, body
}

func (c *naiveCrawler) readRobots(authority string) {
	if _, ok := c.robots[authority]; ok {
		return
	}
	u := "http://" + authority + "/robots.txt"
	status, hdr, body := c.get(u)
	for hops := 0; status/100 == 3 && hops < 5; hops++ {
		base, _ := url.Parse(u)
		loc, err := base.Parse(hdr.Get("Location"))
		if err != nil {
			c.t.Fatalf("robots redirect: %v", err)
		}
		u = loc.String()
		status, hdr, body = c.get(u)
	}
	rd, err := robotstxt.FromStatusAndBytes(status, body)
	if err != nil {
		c.t.Fatalf("robots.txt of %s: %v", authority, err)
	}
	c.robots[authority] = rd
	if c.sitemaps {
		for _, sm := range rd.Sitemaps {
			c.readSitemap(sm)
		}
	}
}

func (c *naiveCrawler) readSitemap(u string) {
	status, _, body := c.get(u)
	if status != http.StatusOK {
		c.t.Fatalf("sitemap %s: status %d", u, status)
	}
	if strings.HasSuffix(u, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			c.t.Fatalf("sitemap %s: %v", u, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			c.t.Fatalf("sitemap %s: %v", u, err)
		}
	}
	if strings.HasSuffix(u, ".txt") {
		for line := range strings.Lines(string(body)) {
			if line = strings.TrimSpace(line); line != "" {
				c.enqueue(line, 1)
			}
		}
		return
	}
	var doc struct {
		Sitemaps []string `xml:"sitemap>loc"`
		URLs     []string `xml:"url>loc"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		c.t.Fatalf("sitemap %s: %v", u, err)
	}
	for _, s := range doc.Sitemaps {
		c.readSitemap(s)
	}
	for _, s := range doc.URLs {
		c.enqueue(s, 1)
	}
}

func (c *naiveCrawler) allowed(raw string) bool {
	if !c.obeyRobots {
		return true
	}
	u, _ := url.Parse(raw)
	rd := c.robots[strings.ToLower(u.Host)]
	target := u.EscapedPath()
	if u.RawQuery != "" {
		target += "?" + u.RawQuery
	}
	return rd.TestAgent(target, "naivebot")
}

func (c *naiveCrawler) visit(it queued) {
	if !c.allowed(it.url) {
		return
	}
	status, hdr, body := c.get(it.url)
	canon, _ := Canonical(it.url)
	c.depth[canon] = it.depth
	base, _ := url.Parse(it.url)
	if status/100 == 3 {
		loc, err := base.Parse(hdr.Get("Location"))
		if err != nil {
			c.t.Fatalf("redirect from %s: %v", it.url, err)
		}
		c.enqueue(loc.String(), it.depth+1)
		return
	}
	if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		return
	}
	links, baseHref, nofollowPage := parseHTML(body)
	if c.useBase && baseHref != "" {
		b, err := base.Parse(baseHref)
		if err != nil {
			c.t.Fatalf("base href on %s: %v", it.url, err)
		}
		base = b
	}
	for _, l := range links {
		if c.obeyNofollow && (nofollowPage || l.nofollow) {
			continue
		}
		ref, err := base.Parse(l.href)
		if err != nil {
			c.t.Fatalf("href %q on %s: %v", l.href, it.url, err)
		}
		ref.Fragment = ""
		c.enqueue(ref.String(), it.depth+1)
	}
}

type anchor struct {
	href     string
	nofollow bool
}

func parseHTML(body []byte) (links []anchor, base string, nofollow bool) {
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return links, base, nofollow
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			attr := func(name string) string {
				for _, a := range tok.Attr {
					if a.Key == name {
						return a.Val
					}
				}
				return ""
			}
			switch tok.Data {
			case "base":
				if base == "" {
					base = attr("href")
				}
			case "meta":
				if strings.EqualFold(attr("name"), "robots") && strings.Contains(attr("content"), "nofollow") {
					nofollow = true
				}
			case "a":
				if h := attr("href"); h != "" {
					links = append(links, anchor{href: h, nofollow: strings.Contains(attr("rel"), "nofollow")})
				}
			}
		}
	}
}

type queued struct {
	url   string
	depth int
}

// depthQueue is a min-heap by depth, first in first out within a depth.
type depthQueue struct {
	items []queued
	seq   []int
	next  int
}

func (q *depthQueue) Len() int { return len(q.items) }
func (q *depthQueue) Less(i, j int) bool {
	if q.items[i].depth != q.items[j].depth {
		return q.items[i].depth < q.items[j].depth
	}
	return q.seq[i] < q.seq[j]
}
func (q *depthQueue) Swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.seq[i], q.seq[j] = q.seq[j], q.seq[i]
}
func (q *depthQueue) Push(x any) {
	q.items = append(q.items, x.(queued))
	q.seq = append(q.seq, q.next)
	q.next++
}
func (q *depthQueue) Pop() any {
	n := len(q.items) - 1
	it := q.items[n]
	q.items, q.seq = q.items[:n], q.seq[:n]
	return it
}
