package testweb

import (
	"bytes"
	"compress/gzip"
	"container/heap"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/temoto/robotstxt"
	"golang.org/x/net/html"
)

// naiveCrawler is a small single-threaded crawler written independently of
// the generator (it reads robots.txt with temoto/robotstxt and HTML with
// x/net/html) to prove that the ground truth matches what the server serves.
// A robots.txt it cannot get (5xx, no answer within robotsTimeout, a failed
// connection) disallows everything; a page answering 429 is asked again
// after its Retry-After, one cut off is asked again at once, each at most
// DefaultRetries times. Its switches make it rude in the ways the analysis
// must catch.
type naiveCrawler struct {
	client *http.Client

	obeyRobots   bool
	obeyNofollow bool
	useBase      bool
	canonical    bool // dedupe by Canonical; otherwise by the resolved URL without fragment
	sitemaps     bool
	retryAfter   bool // wait a 429's Retry-After before asking again
	maxDepth     int  // 0: unlimited

	robots  map[string]*robotstxt.RobotsData
	best    map[string]int // dedupe key → smallest depth seen
	fetched map[string]bool
	depth   map[string]int // canonical URL → depth it was fetched at
	queue   depthQueue
}

func newNaiveCrawler(client *http.Client) *naiveCrawler {
	c := &naiveCrawler{obeyRobots: true, obeyNofollow: true, useBase: true, canonical: true, sitemaps: true, retryAfter: true}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.client = client
	return c
}

// naiveAbort carries the error that stops a naive crawl.
type naiveAbort struct{ err error }

// fatalf stops the crawl with an error; crawl returns it.
func (c *naiveCrawler) fatalf(format string, args ...any) {
	panic(naiveAbort{fmt.Errorf(format, args...)})
}

// mustCrawl crawls from seeds and fails the test if the crawl stopped
// with an error.
func (c *naiveCrawler) mustCrawl(t *testing.T, seeds []string) {
	t.Helper()
	if err := c.crawl(seeds); err != nil {
		t.Fatal(err)
	}
}

// crawlAll runs the crawls at once, each in its own goroutine (they spend
// their time waiting out Retry-After and a hanging robots.txt, which
// t.Parallel would run only GOMAXPROCS at a time), and fails the test if
// any stopped with an error.
func crawlAll(t *testing.T, crawls ...func() error) {
	t.Helper()
	errs := make([]error, len(crawls))
	var wg sync.WaitGroup
	for i, crawl := range crawls {
		wg.Go(func() { errs[i] = crawl() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// crawl crawls from seeds; it returns the error that stopped it, if any.
func (c *naiveCrawler) crawl(seeds []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(naiveAbort)
			if !ok {
				panic(r)
			}
			err = a.err
		}
	}()
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
	return nil
}

func (c *naiveCrawler) key(u string) string {
	if c.canonical {
		k, err := Canonical(u)
		if err != nil {
			c.fatalf("canonical %q: %v", u, err)
		}
		return k
	}
	k, _, _ := strings.Cut(u, "#")
	return k
}

func (c *naiveCrawler) enqueue(raw string, depth int) {
	u, err := url.Parse(raw)
	if err != nil {
		c.fatalf("bad URL %q: %v", raw, err)
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

// Timeouts of the naive crawler: the hanging robots.txt costs one
// robotsTimeout; the rest answer at once.
const (
	robotsTimeout = 500 * time.Millisecond
	pageTimeout   = 10 * time.Second
)

// try requests u once: the status, header and body, or an error if it got
// no complete answer within timeout.
func (c *naiveCrawler) try(u string, timeout time.Duration) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		c.fatalf("GET %s: %v", u, err)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading body: %w", err)
	}
	return resp.StatusCode, resp.Header, body, nil
}

// get requests u as a page: a failure (no complete answer, or 429) is
// tried again up to DefaultRetries times, after the Retry-After of a 429.
// It reports false if every try failed.
func (c *naiveCrawler) get(u string) (int, http.Header, []byte, bool) {
	for tries := 0; ; tries++ {
		status, hdr, body, err := c.try(u, pageTimeout)
		if err == nil && status != http.StatusTooManyRequests {
			return status, hdr, body, true
		}
		if tries == DefaultRetries {
			return 0, nil, nil, false
		}
		if err == nil && c.retryAfter {
			secs, perr := strconv.Atoi(hdr.Get("Retry-After"))
			if perr != nil {
				c.fatalf("GET %s: 429 with Retry-After %q", u, hdr.Get("Retry-After"))
			}
			time.Sleep(time.Duration(secs) * time.Second) // what the host asks for, not synchronisation
		}
	}
}

func (c *naiveCrawler) readRobots(authority string) {
	if _, ok := c.robots[authority]; ok {
		return
	}
	u := "http://" + authority + "/robots.txt"
	status, hdr, body, err := c.try(u, robotsTimeout)
	for hops := 0; err == nil && status/100 == 3 && hops < 5; hops++ {
		base, _ := url.Parse(u)
		loc, err := base.Parse(hdr.Get("Location"))
		if err != nil {
			c.fatalf("robots redirect: %v", err)
		}
		u = loc.String()
		status, hdr, body, err = c.try(u, robotsTimeout)
	}
	if err != nil {
		status, body = http.StatusServiceUnavailable, nil // unreachable: complete disallow
	}
	rd, err := robotstxt.FromStatusAndBytes(status, body)
	if err != nil {
		c.fatalf("robots.txt of %s: %v", authority, err)
	}
	c.robots[authority] = rd
	if c.sitemaps {
		for _, sm := range rd.Sitemaps {
			c.readSitemap(sm)
		}
	}
}

func (c *naiveCrawler) readSitemap(u string) {
	status, _, body, ok := c.get(u)
	if !ok || status != http.StatusOK {
		c.fatalf("sitemap %s: status %d", u, status)
	}
	if strings.HasSuffix(u, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			c.fatalf("sitemap %s: %v", u, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			c.fatalf("sitemap %s: %v", u, err)
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
		c.fatalf("sitemap %s: %v", u, err)
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
	status, hdr, body, ok := c.get(it.url)
	if !ok {
		return
	}
	canon, _ := Canonical(it.url)
	c.depth[canon] = it.depth
	base, _ := url.Parse(it.url)
	if status/100 == 3 {
		loc, err := base.Parse(hdr.Get("Location"))
		if err != nil {
			c.fatalf("redirect from %s: %v", it.url, err)
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
			c.fatalf("base href on %s: %v", it.url, err)
		}
		base = b
	}
	for _, l := range links {
		if c.obeyNofollow && (nofollowPage || l.nofollow) {
			continue
		}
		ref, err := base.Parse(l.href)
		if err != nil {
			c.fatalf("href %q on %s: %v", l.href, it.url, err)
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
