package testweb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// newChangingVirtual serves cfg by name on a test clock reading epoch.
func newChangingVirtual(t *testing.T, cfg ChangingConfig) (*ChangingVirtual, *testClock) {
	t.Helper()
	clock := newTestClock()
	cfg.Clock, cfg.Start = clock.Now, epoch
	v, err := NewChangingVirtual(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v, clock
}

type response struct {
	status int
	header http.Header
	body   string
}

// fetch sends one request through the virtual web's client (which follows
// no redirect).
func fetch(t *testing.T, v *ChangingVirtual, method, url string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, val := range header {
		req.Header.Set(k, val)
	}
	resp, err := v.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(body)}
}

// pick returns the first page at epoch with validators k that changes and
// stays.
func pick(t *testing.T, w *ChangingWeb, k Validators) ChangingPage {
	t.Helper()
	for _, p := range w.Pages(epoch) {
		if p.Validators == k && p.Rate > 0 && p.Fate == FateNone {
			return p
		}
	}
	t.Fatalf("no changing page with %v validators", k)
	return ChangingPage{}
}

var versionRe = regexp.MustCompile(`version (\d+)`)

func versionOf(t *testing.T, body string) int {
	t.Helper()
	m := versionRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no version in %q", body)
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

var validatorMix = ChangingConfig{Hosts: 1, PagesPerHost: 20, Seed: 4, WeakETagShare: 0.2, NoValidatorShare: 0.2,
	LyingLastModifiedShare: 0.2, LyingETagShare: 0.2}

// A page with true validators answers 304 exactly when RFC 9110 §13 says:
// If-None-Match by weak comparison when present, else If-Modified-Since.
func TestChangingConditionalRequests(t *testing.T) {
	for _, kind := range []Validators{StrongETag, WeakETag} {
		t.Run(kind.String(), func(t *testing.T) {
			v, clock := newChangingVirtual(t, validatorMix)
			p := pick(t, v.Web, kind)
			first := fetch(t, v, http.MethodGet, p.URL, nil)
			etag, lm := first.header.Get("ETag"), first.header.Get("Last-Modified")
			if first.status != http.StatusOK || etag == "" || lm == "" || versionOf(t, first.body) != 0 {
				t.Fatalf("first fetch: %d, ETag %q, Last-Modified %q, body %.80q", first.status, etag, lm, first.body)
			}
			if weak := strings.HasPrefix(etag, "W/"); weak != (kind == WeakETag) {
				t.Fatalf("%v page sent ETag %s", kind, etag)
			}
			opaque := strings.TrimPrefix(etag, "W/")
			lmTime, _ := http.ParseTime(lm)
			later, earlier := lmTime.Add(time.Hour).Format(http.TimeFormat), lmTime.Add(-time.Second).Format(http.TimeFormat)
			cases := []struct {
				name   string
				header map[string]string
				want   int
			}{
				{"unconditional", nil, 200},
				{"matching If-None-Match", map[string]string{"If-None-Match": etag}, 304},
				{"weak comparison: the other strength", map[string]string{"If-None-Match": map[bool]string{true: opaque, false: "W/" + opaque}[kind == WeakETag]}, 304},
				{"the tag in a list", map[string]string{"If-None-Match": `"x", W/"y",` + etag}, 304},
				{"star", map[string]string{"If-None-Match": "*"}, 304},
				{"another tag", map[string]string{"If-None-Match": `"other"`}, 200},
				{"a malformed tag", map[string]string{"If-None-Match": "other"}, 200},
				{"If-Modified-Since the Last-Modified", map[string]string{"If-Modified-Since": lm}, 304},
				{"If-Modified-Since later", map[string]string{"If-Modified-Since": later}, 304},
				{"If-Modified-Since earlier", map[string]string{"If-Modified-Since": earlier}, 200},
				{"If-Modified-Since not a date", map[string]string{"If-Modified-Since": "yesterday"}, 200},
				{"If-None-Match failing wins over If-Modified-Since", map[string]string{"If-None-Match": `"other"`, "If-Modified-Since": later}, 200},
				{"If-None-Match matching wins over If-Modified-Since", map[string]string{"If-None-Match": etag, "If-Modified-Since": earlier}, 304},
			}
			for _, c := range cases {
				n := v.Log.Len()
				got := fetch(t, v, http.MethodGet, p.URL, c.header)
				if got.status != c.want {
					t.Errorf("%s: %d, want %d", c.name, got.status, c.want)
				}
				if got.status == http.StatusNotModified && (got.body != "" || got.header.Get("ETag") != etag) {
					t.Errorf("%s: 304 with body %q and ETag %q", c.name, got.body, got.header.Get("ETag"))
				}
				e := v.Log.Entries()[n]
				if e.Conditional != (c.header != nil) || e.Bytes != int64(len(got.body)) || !e.Start.Equal(clock.Now()) {
					t.Errorf("%s: logged conditional %v, %d bytes at %v; sent %d bytes at %v", c.name, e.Conditional, e.Bytes, e.Start, len(got.body), clock.Now())
				}
			}

			// After the page changes, the old validators no longer match.
			change := v.Web.Changes(p.URL, epoch, epoch.Add(24*time.Hour))[0]
			clock.Set(change)
			for _, h := range []map[string]string{{"If-None-Match": etag}, {"If-Modified-Since": lm}} {
				got := fetch(t, v, http.MethodGet, p.URL, h)
				if got.status != http.StatusOK || got.header.Get("ETag") == etag || versionOf(t, got.body) != 1 {
					t.Errorf("after the change, %v: %d, ETag %q, body %.80q", h, got.status, got.header.Get("ETag"), got.body)
				}
				if lm, _ := http.ParseTime(got.header.Get("Last-Modified")); !lm.Equal(change.Truncate(time.Second)) {
					t.Errorf("after the change: Last-Modified %v, want %v", lm, change)
				}
			}
		})
	}
}

// Pages without validators, or with lying ones, never answer 304; the lying
// validators change while the content does not.
func TestChangingMissingAndLyingValidators(t *testing.T) {
	v, clock := newChangingVirtual(t, validatorMix)
	star := map[string]string{"If-None-Match": "*", "If-Modified-Since": epoch.Add(time.Hour).Format(http.TimeFormat)}

	none := pick(t, v.Web, NoValidators)
	if got := fetch(t, v, http.MethodGet, none.URL, star); got.status != 200 || got.header.Get("ETag") != "" || got.header.Get("Last-Modified") != "" {
		t.Errorf("page without validators: %d, ETag %q, Last-Modified %q", got.status, got.header.Get("ETag"), got.header.Get("Last-Modified"))
	}

	lyingLM := pick(t, v.Web, LyingLastModified)
	a := fetch(t, v, http.MethodGet, lyingLM.URL, nil)
	clock.Advance(2 * time.Second)
	b := fetch(t, v, http.MethodGet, lyingLM.URL, map[string]string{"If-Modified-Since": a.header.Get("Last-Modified")})
	if a.header.Get("Last-Modified") != a.header.Get("Date") || b.header.Get("Last-Modified") != b.header.Get("Date") ||
		a.header.Get("Last-Modified") == b.header.Get("Last-Modified") {
		t.Errorf("lying Last-Modified %q then %q (dates %q, %q): want always now", a.header.Get("Last-Modified"),
			b.header.Get("Last-Modified"), a.header.Get("Date"), b.header.Get("Date"))
	}
	if b.status != 200 || a.body != b.body || a.header.Get("ETag") != "" {
		t.Errorf("lying Last-Modified page: %d, same content %v, ETag %q", b.status, a.body == b.body, a.header.Get("ETag"))
	}

	lyingTag := pick(t, v.Web, LyingETag)
	a = fetch(t, v, http.MethodGet, lyingTag.URL, nil)
	b = fetch(t, v, http.MethodGet, lyingTag.URL, map[string]string{"If-None-Match": a.header.Get("ETag")})
	if a.header.Get("ETag") == "" || a.header.Get("ETag") == b.header.Get("ETag") || b.status != 200 || a.body != b.body {
		t.Errorf("lying ETag page: ETags %q then %q, status %d, same content %v", a.header.Get("ETag"), b.header.Get("ETag"), b.status, a.body == b.body)
	}
	if a.header.Get("Last-Modified") != "" {
		t.Errorf("lying ETag page sent Last-Modified %q", a.header.Get("Last-Modified"))
	}
}

func TestChangingHeadAndMethods(t *testing.T) {
	v, _ := newChangingVirtual(t, validatorMix)
	p := pick(t, v.Web, StrongETag)
	get := fetch(t, v, http.MethodGet, p.URL, nil)
	head := fetch(t, v, http.MethodHead, p.URL, nil)
	if head.status != 200 || head.body != "" || head.header.Get("ETag") != get.header.Get("ETag") ||
		head.header.Get("Content-Length") != strconv.Itoa(len(get.body)) {
		t.Errorf("HEAD: %d, body %q, ETag %q, length %q", head.status, head.body, head.header.Get("ETag"), head.header.Get("Content-Length"))
	}
	if e := v.Log.Entries()[1]; e.Method != http.MethodHead || e.Bytes != 0 {
		t.Errorf("HEAD logged %+v", e)
	}
	if got := fetch(t, v, http.MethodPost, p.URL, nil); got.status != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", got.status)
	}
}

// Pages go (404 or 410) and move (301 to /m/{k}, a page with the same
// content carrying on changing) at their FateAt.
func TestChangingGoneAndMoved(t *testing.T) {
	v, clock := newChangingVirtual(t, ChangingConfig{Hosts: 1, PagesPerHost: 40, Seed: 6, GoneShare: 0.25, MovedShare: 0.25,
		FateWithin: time.Hour, MinChangeInterval: time.Minute, MaxChangeInterval: 10 * time.Minute})
	statuses := map[int]bool{}
	for _, p := range v.Web.Pages(epoch) {
		if p.Fate == FateNone {
			continue
		}
		clock.Set(p.FateAt.Add(-time.Nanosecond))
		if got := fetch(t, v, http.MethodGet, p.URL, nil); got.status != 200 {
			t.Errorf("%s just before its fate: %d", p.URL, got.status)
		}
		clock.Set(p.FateAt)
		got := fetch(t, v, http.MethodGet, p.URL, nil)
		switch p.Fate {
		case FateGone:
			statuses[got.status] = true
			if got.status != p.GoneStatus || v.Web.VersionAt(p.URL, p.FateAt) != VersionGone {
				t.Errorf("%s gone: %d, want %d", p.URL, got.status, p.GoneStatus)
			}
		case FateMoved:
			if got.status != 301 || "http://h000.test"+got.header.Get("Location") != p.MovedTo {
				t.Errorf("%s moved: %d to %q, want 301 to %s", p.URL, got.status, got.header.Get("Location"), p.MovedTo)
			}
			clock.Set(p.FateAt.Add(-time.Nanosecond))
			if early := fetch(t, v, http.MethodGet, p.MovedTo, nil); early.status != 404 {
				t.Errorf("%s before the move: %d", p.MovedTo, early.status)
			}
			at := p.FateAt.Add(30 * time.Minute)
			clock.Set(at)
			moved := fetch(t, v, http.MethodGet, p.MovedTo, nil)
			if moved.status != 200 || versionOf(t, moved.body) != v.Web.VersionAt(p.MovedTo, at) || versionOf(t, moved.body) == 0 {
				t.Errorf("%s after the move: %d, version %d, want %d > 0", p.MovedTo, moved.status, versionOf(t, moved.body), v.Web.VersionAt(p.MovedTo, at))
			}
			if np, ok := v.Web.Page(p.MovedTo); !ok || np.MovedFrom != p.URL || np.Rate != p.Rate {
				t.Errorf("Page(%s) = %+v, %v", p.MovedTo, np, ok)
			}
		}
	}
	if !statuses[404] || !statuses[410] {
		t.Errorf("gone pages answered %v, want both 404 and 410", statuses)
	}
}

func TestChangingRobots(t *testing.T) {
	v, clock := newChangingVirtual(t, ChangingConfig{Hosts: 1, PagesPerHost: 20, Seed: 1, CrawlDelay: 2 * time.Second, RobotsChangeAt: time.Hour})
	before := fetch(t, v, http.MethodGet, "http://h000.test/robots.txt", nil).body
	want := "User-agent: *\nCrawl-delay: 2\nDisallow:\n\nSitemap: http://h000.test/sitemap.xml\n"
	if before != want {
		t.Errorf("robots.txt before the change:\n%s\nwant\n%s", before, want)
	}
	clock.Set(epoch.Add(time.Hour))
	after := fetch(t, v, http.MethodGet, "http://h000.test/robots.txt", nil).body
	if !strings.Contains(after, "Disallow: /p/1\n") || !strings.Contains(after, "Crawl-delay: 2\n") {
		t.Errorf("robots.txt after the change:\n%s", after)
	}
	for url, allowed := range map[string]bool{"http://h000.test/p/1": false, "http://h000.test/p/12": false, "http://h000.test/p/2": true, "http://h000.test/": true} {
		if v.Web.Allowed(url, epoch) != true || v.Web.Allowed(url, epoch.Add(time.Hour)) != allowed {
			t.Errorf("Allowed(%s): %v before, %v after; want true, %v", url, v.Web.Allowed(url, epoch), v.Web.Allowed(url, epoch.Add(time.Hour)), allowed)
		}
	}
}

var sitemapEntry = regexp.MustCompile(`<loc>([^<]+)</loc><lastmod>([^<]+)</lastmod>`)

// Sitemaps list the pages with a <lastmod> that is true on some hosts,
// always now on others, random on the rest.
func TestChangingSitemaps(t *testing.T) {
	v, clock := newChangingVirtual(t, ChangingConfig{Hosts: 6, PagesPerHost: 10, Seed: 8, LyingSitemapShare: 2.0 / 3,
		MinChangeInterval: time.Minute, MaxChangeInterval: time.Hour})
	clock.Set(epoch.Add(3 * time.Hour))
	now := clock.Now()
	seen := map[SitemapLastmod]int{}
	for _, h := range v.Web.Hosts() {
		seen[h.Lastmod]++
		body := fetch(t, v, http.MethodGet, "http://"+h.Authority+"/sitemap.xml", nil).body
		entries := sitemapEntry.FindAllStringSubmatch(body, -1)
		if len(entries) != 10 {
			t.Fatalf("%s: %d sitemap entries, want 10", h.Authority, len(entries))
		}
		atNow := 0
		for _, e := range entries {
			lastmod, err := time.Parse(time.RFC3339, e[2])
			if err != nil {
				t.Fatal(err)
			}
			page := fetch(t, v, http.MethodGet, e[1], nil)
			lm, _ := http.ParseTime(page.header.Get("Last-Modified"))
			switch h.Lastmod {
			case LastmodTrue:
				if page.header.Get("Last-Modified") != "" && !lastmod.Equal(lm) {
					t.Errorf("%s: true <lastmod> %v, Last-Modified %v", e[1], lastmod, lm)
				}
			case LastmodNow:
				if !lastmod.Equal(now) {
					t.Errorf("%s: <lastmod> %v, want now %v", e[1], lastmod, now)
				}
			case LastmodRandom:
				if lastmod.After(now) || lastmod.Before(now.Add(-lastmodSpread)) {
					t.Errorf("%s: random <lastmod> %v outside the month before %v", e[1], lastmod, now)
				}
			}
			if lastmod.Equal(now) {
				atNow++
			}
		}
		if h.Lastmod == LastmodRandom && atNow > 1 {
			t.Errorf("%s: %d random <lastmod>s are now", h.Authority, atNow)
		}
	}
	if seen[LastmodTrue] == 0 || seen[LastmodNow] == 0 || seen[LastmodRandom] == 0 {
		t.Errorf("sitemap kinds over 6 hosts: %v, want each", seen)
	}
}

func TestChangingVirtualRefusesOtherHosts(t *testing.T) {
	v, _ := newChangingVirtual(t, ChangingConfig{Hosts: 1, PagesPerHost: 1})
	if _, err := v.DialContext(context.Background(), "tcp", "example.com:80"); !errors.Is(err, ErrUnknownHost) {
		t.Errorf("dial example.com: %v", err)
	}
	if got := fetch(t, v, http.MethodGet, "http://h000.test/nothing", nil); got.status != 404 {
		t.Errorf("unknown path: %d", got.status)
	}
}

func TestChangingLoopback(t *testing.T) {
	l, err := ListenChangingLoopback(ChangingConfig{Hosts: 2, PagesPerHost: 3, Seed: 1, CrawlDelay: time.Second}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, seed := range l.Web.Seeds() {
		if !strings.HasPrefix(seed, "http://127.0.") {
			t.Errorf("seed %s is not on loopback", seed)
		}
		resp, err := http.Get(seed + "robots.txt")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "Crawl-delay: 1\n") {
			t.Errorf("%s robots.txt: %q", seed, body)
		}
	}
	r, err := l.Judge(FreshnessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 2 || len(r.RobotsViolations) != 0 || len(r.PolitenessViolations) != 0 {
		t.Errorf("judged %d requests, violations %v %v", r.Requests, r.RobotsViolations, r.PolitenessViolations)
	}
	if err := l.Close(); err != nil {
		t.Error(err)
	}
}

// Concurrent requests while the clock moves on and the judge reads the
// schedule: the lazily grown pages and changes are shared safely (run with
// -race), and every response is the version of its time.
func TestChangingConcurrentUse(t *testing.T) {
	cfg := TypicalChangingConfig(2, 30, 3)
	cfg.MinChangeInterval, cfg.NewPageInterval = time.Second, 5*time.Second
	v, clock := newChangingVirtual(t, cfg)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				url := fmt.Sprintf("http://h00%d.test/p/%d", g%2, (g*7+i)%40)
				resp, err := v.Client().Get(url)
				if err != nil {
					errs <- err
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				// The clock moves in whole seconds, so the Date header
				// is the instant the response's version was taken at.
				at, err := http.ParseTime(resp.Header.Get("Date"))
				if m := versionRe.FindSubmatch(body); err == nil && resp.StatusCode == http.StatusOK && m != nil {
					if want := strconv.Itoa(v.Web.VersionAt(url, at)); string(m[1]) != want {
						errs <- fmt.Errorf("%s at %v: version %s, the web says %s", url, at, m[1], want)
						return
					}
				}
			}
		})
	}
	for range 100 {
		clock.Advance(time.Second)
		v.Web.Pages(clock.Now().Add(time.Minute))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r, err := v.Judge(FreshnessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.PageFetches != 8*40 {
		t.Errorf("judged %d page fetches of %d", r.PageFetches, 8*40)
	}
}
