package testweb

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"hash/adler32"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/temoto/robotstxt"
	"golang.org/x/text/encoding/unicode"
)

func newHostile(t *testing.T, cfg HostileConfig) *Hostile {
	t.Helper()
	hw, err := NewHostile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hw.Close)
	return hw
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return resp, body
}

func TestHostileWebAdlerAppend(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 3, 1000, 65520, 65521, 65522, 200_000, 1 << 20} {
		prefix := []byte("<html>")
		data := append(bytes.Clone(prefix), bytes.Repeat([]byte{' '}, int(n))...)
		if got, want := adlerAppend(adler32.Checksum(prefix), ' ', n), adler32.Checksum(data); got != want {
			t.Errorf("adlerAppend(…, %d) = %#x, want %#x", n, got, want)
		}
	}
}

// TestHostileWebBombsDecode decodes small bombs of every coding to the end,
// checksums included, so the large ones the hostile web serves are valid
// streams too: they repeat the same parts more often.
func TestHostileWebBombsDecode(t *testing.T) {
	const prefix = "<!DOCTYPE html>\n<html><body>\n"
	const size = 5 << 20
	for _, coding := range []string{"gzip", "deflate", "br"} {
		t.Run(coding, func(t *testing.T) {
			b, err := MakeBomb(coding, prefix, size)
			if err != nil {
				t.Fatal(err)
			}
			var r io.Reader
			switch coding {
			case "gzip":
				r, err = gzip.NewReader(bytes.NewReader(b))
			case "deflate":
				r, err = zlib.NewReader(bytes.NewReader(b))
			case "br":
				r = brotli.NewReader(bytes.NewReader(b))
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("decoding a %s bomb: %v", coding, err)
			}
			if len(out) < size || len(out) >= size+len(prefix)+bombChunk {
				t.Errorf("%s bomb decodes to %d bytes, want about %d", coding, len(out), size)
			}
			if !bytes.HasPrefix(out, []byte(prefix)) || strings.Trim(string(out[len(prefix):]), " ") != "" {
				t.Errorf("%s bomb does not decode to the prefix and blanks", coding)
			}
			if ratio := len(out) / len(b); ratio < 500 {
				t.Errorf("%s bomb: %d bytes decode to %d, ratio %d; a bomb should do better", coding, len(b), len(out), ratio)
			}
		})
	}
	if _, err := MakeBomb("zstd", "", 1); !errors.Is(err, ErrConfig) {
		t.Errorf("MakeBomb(zstd) = %v, want ErrConfig", err)
	}
}

func TestHostileWebHosts(t *testing.T) {
	hw := newHostile(t, HostileConfig{Normal: Config{Hosts: 2, PagesPerHost: 3}})
	c := hw.Client()
	if len(hw.Hosts()) == 0 {
		t.Fatal("no hostile hosts")
	}
	for _, s := range Scenarios() {
		hs := hw.Scenario(s)
		if len(hs) == 0 || len(hs[0].Seeds) == 0 {
			t.Errorf("scenario %s has no host with seeds", s)
		}
	}

	t.Run("robots", func(t *testing.T) {
		// gzip on the wire, whatever the request asked.
		resp, body := get(t, c, "http://gzrobots.test/robots.txt")
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("gzrobots.test: Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := io.ReadAll(zr)
		checkDisallows(t, "gzrobots.test", plain, "/secret/x", true)

		_, body = get(t, c, "http://utf16robots.test/robots.txt")
		if !bytes.HasPrefix(body, []byte{0xFF, 0xFE}) {
			t.Fatalf("utf16robots.test: no UTF-16LE byte order mark: % x", body[:4])
		}
		plain, err = unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder().Bytes(body)
		if err != nil {
			t.Fatal(err)
		}
		checkDisallows(t, "utf16robots.test", plain, "/secret/x", true)

		// temoto/robotstxt ends a group at the blank line; Google's
		// reference parser, which heed follows where RFC 9309 is silent,
		// does not (only a rule line ends a run of User-agent lines), so
		// the file is checked as text.
		_, body = get(t, c, "http://groups.test/robots.txt")
		if want := "User-agent: *\nCrawl-delay: 1\n\nUser-agent: BadBot\nDisallow: /\n"; string(body) != want {
			t.Errorf("groups.test/robots.txt = %q, want %q", body, want)
		}

		resp, _ = get(t, c, "http://slowrobots.test/robots.txt")
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || loc != "http://pace.test/robots/slowrobots.txt" {
			t.Errorf("slowrobots.test/robots.txt: %d to %q", resp.StatusCode, loc)
		}
		_, body = get(t, c, "http://pace.test/robots.txt")
		if !strings.Contains(string(body), "Crawl-delay: 1\n") {
			t.Errorf("pace.test/robots.txt has no Crawl-delay of 1 s:\n%s", body)
		}
	})

	t.Run("stale robots", func(t *testing.T) {
		resp, _ := get(t, c, "http://stale.test/robots.txt")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "max-age=60" {
			t.Errorf("first stale.test/robots.txt: %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
		resp, _ = get(t, c, "http://stale.test/robots.txt")
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3600" {
			t.Errorf("second stale.test/robots.txt: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	})

	t.Run("redirects", func(t *testing.T) {
		for from, to := range map[string]string{
			"http://redirect.test/loop/a":         "/loop/b",
			"http://redirect.test/loop/b":         "/loop/a",
			"http://redirect.test/self":           "/self",
			"http://redirect.test/to-private":     "/private/secret",
			"http://redirect.test/chain/29":       "/chain/30",
			"http://private.test/r/metadata":      "http://169.254.169.254/latest/meta-data/",
			"http://private.test/r/ten":           "http://10.0.0.1/",
			"http://redirect.test/to-private-abs": "http://redirect.test/private/other",
		} {
			resp, _ := get(t, c, from)
			if resp.StatusCode < 300 || resp.StatusCode > 399 || resp.Header.Get("Location") != to {
				t.Errorf("%s: %d to %q, want a redirect to %q", from, resp.StatusCode, resp.Header.Get("Location"), to)
			}
		}
		resp, _ := get(t, c, "http://redirect.test/nolocation")
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "" {
			t.Errorf("/nolocation: %d with Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		resp, _ = get(t, c, "http://private.test/r/zero")
		if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "http://0.0.0.0:") {
			t.Errorf("/r/zero redirects to %q", loc)
		}
	})

	t.Run("pages", func(t *testing.T) {
		_, body := get(t, c, "http://flood.test/")
		if n := bytes.Count(body, []byte("<a href=")); n < 300_000 || len(body) < 4<<20 {
			t.Errorf("flood.test/: %d links in %d bytes", n, len(body))
		}
		_, body = get(t, c, "http://nest.test/nofollow-deep")
		if n := bytes.Count(body, []byte("<div>")); n <= 512 || !bytes.Contains(body, []byte(`content="noindex,nofollow"`)) {
			t.Errorf("nest.test/nofollow-deep: %d nested divs", n)
		}
		resp, _ := get(t, c, "http://paths.test/a/a/a/")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("paths.test/a/a/a/: %d", resp.StatusCode)
		}
		_, body = get(t, c, "http://h000.test/")
		if !bytes.Contains(body, []byte("h000.test page 0")) {
			t.Errorf("the normal web is not served beside: %.80s", body)
		}
	})

	t.Run("bomb on the wire", func(t *testing.T) {
		resp, err := c.Get("http://bomb.test/bomb/br")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Encoding") != "br" {
			t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
		n, err := io.Copy(io.Discard, io.LimitReader(brotli.NewReader(resp.Body), 16<<20))
		if err != nil || n != 16<<20 {
			t.Errorf("decoded %d bytes of the br bomb (%v), want the 16 MiB asked for", n, err)
		}
	})
}

func checkDisallows(t *testing.T, host string, robots []byte, path string, want bool) {
	t.Helper()
	r, err := robotstxt.FromBytes(robots)
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	if got := !r.TestAgent(path, "heed"); got != want {
		t.Errorf("%s: disallows %s = %v, want %v; robots.txt:\n%s", host, path, got, want, robots)
	}
}

// TestHostileWebRefusesForeignDials: the web's dialer refuses, and records,
// every address that is not one of its hosts, without trying it.
func TestHostileWebRefusesForeignDials(t *testing.T) {
	hw := newHostile(t, HostileConfig{})
	for _, addr := range []string{"10.0.0.1:80", "169.254.169.254:80", "drip.test:443", "0.0.0.0:80"} {
		if _, err := hw.DialContext(context.Background(), "tcp", addr); !errors.Is(err, ErrUnknownHost) {
			t.Errorf("DialContext(%s) = %v, want ErrUnknownHost", addr, err)
		}
	}
	if got := hw.ForeignDials(); len(got) != 4 || got[0] != "tcp 10.0.0.1:80" {
		t.Errorf("ForeignDials = %q", got)
	}
	conn, err := hw.DialContext(context.Background(), "tcp", "drip.test:80")
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// TestHostileWebHangsEndOnClose: dripping, hanging and silent hosts hold
// their clients as designed, give up when the client does, and Close ends
// them all at once.
func TestHostileWebHangsEndOnClose(t *testing.T) {
	hw, err := NewHostile(HostileConfig{DripInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := hw.Client()
	c.Timeout = 300 * time.Millisecond
	for _, u := range []string{"http://drip.test/drip/headers", "http://hang.test/hang", "http://silent.test/robots.txt"} {
		start := time.Now()
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Errorf("GET %s answered %d within %v", u, resp.StatusCode, c.Timeout)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("GET %s took %v with a %v timeout", u, d, c.Timeout)
		}
	}
	resp, err := c.Get("http://drip.test/drip/body")
	if err != nil {
		t.Fatalf("drip body: headers should come at once: %v", err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Error("drip body ended within the client timeout")
	}
	if hw.SilentAccepts() != 1 {
		t.Errorf("silent.test accepted %d connections, want 1", hw.SilentAccepts())
	}
	// Leave a request hanging and a drip going, then close.
	started := make(chan string, 2)
	notify := func(authority, target string) {
		if target == "/hang" || target == "/drip/body" {
			select {
			case started <- authority + target:
			default:
			}
		}
	}
	hw.serving.Store(&notify)
	ended := make(chan error, 2)
	for _, u := range []string{"http://hang.test/hang", "http://drip.test/drip/body"} {
		go func() {
			resp, err := hw.Client().Get(u)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			ended <- err
		}()
	}
	<-started
	<-started
	start := time.Now()
	hw.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	for range 2 {
		<-ended
	}
	for _, e := range hw.Log.Entries() {
		if e.Status != 0 {
			t.Errorf("%s: status %d, want 0 for a response that never completed", e.URL(), e.Status)
		}
	}
	// The two requests seen to start are logged; the earlier ones are if
	// they reached the server before the client's timeout, which a loaded
	// machine may not grant. silent.test's never reach the log.
	targets := map[string]int{}
	for _, e := range hw.Log.Entries() {
		targets[e.Host+e.Target]++
		if e.Host == "silent.test" {
			t.Errorf("silent.test request logged: %s", e.URL())
		}
	}
	if targets["hang.test/hang"] < 1 || targets["drip.test/drip/body"] < 1 || hw.Log.Len() > 5 {
		t.Errorf("logged %v, want the hanging and dripping requests, at most 5 in all", targets)
	}
}

// TestHostileWebJudge: a rude client is caught on every count the judge
// keeps, and a polite one is not.
func TestHostileWebJudge(t *testing.T) {
	hw := newHostile(t, HostileConfig{})
	c := hw.Client()
	for _, u := range []string{
		"http://gzrobots.test/robots.txt",
		"http://gzrobots.test/",
		"http://gzrobots.test/secret/x",          // forbidden by its robots.txt
		"http://groups.test/",                    // everything is forbidden there
		"http://redirect.test/chain/11",          // past max-redirects 10
		"http://redirect.test/private/y",         // forbidden by its robots.txt
		"http://nest.test/deep/1",                // only a nofollow page links there
		"http://paths.test/a/a/a/a/a/a/",         // six "a" in a row
		"http://paths.test/x/y/x/y/x/y/x/y/x/y/", // five "x/y" in a row
		"http://sitemaps.test/chain/33.xml",
		"http://bomb.test/ok",
		"http://bomb.test/ok", // twice
	} {
		get(t, c, u)
	}
	hw.DialContext(context.Background(), "tcp", "192.168.1.1:80") //nolint:errcheck // refused, as the test wants
	rep, err := hw.Analyze(hw.Log.Entries(), HostileAnalyzeOptions{MinDelay: time.Second, Scenarios: []Scenario{ScenarioRobotsGzip}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", rep)
	if len(rep.Forbidden) != 8 {
		t.Errorf("%d forbidden requests found, want 8: %q", len(rep.Forbidden), rep.Forbidden)
	}
	if len(rep.Duplicates) != 1 {
		t.Errorf("duplicates %q, want bomb.test/ok", rep.Duplicates)
	}
	if len(rep.Missing) != 1 || rep.Missing[0] != "http://gzrobots.test/ok" {
		t.Errorf("missing %q, want gzrobots.test/ok alone (only its scenario was seeded)", rep.Missing)
	}
	if len(rep.PolitenessViolations) == 0 {
		t.Error("back-to-back requests with a 1 s delay not caught")
	}
	if len(rep.ForeignDials) != 1 {
		t.Errorf("foreign dials %q, want the one to 192.168.1.1", rep.ForeignDials)
	}
	if rep.Check() == nil {
		t.Error("Check() = nil for a rude crawl")
	}

	polite := newHostile(t, HostileConfig{})
	for _, u := range []string{"http://gzrobots.test/robots.txt", "http://gzrobots.test/", "http://gzrobots.test/ok"} {
		get(t, polite.Client(), u)
	}
	rep, err = polite.Analyze(polite.Log.Entries(), HostileAnalyzeOptions{Scenarios: []Scenario{ScenarioRobotsGzip}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Check(); err != nil {
		t.Errorf("a polite, complete visit of gzrobots.test judged: %v", err)
	}
}
