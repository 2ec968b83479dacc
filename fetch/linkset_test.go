package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/robots/gate"
)

func TestRegistryMaxLinks(t *testing.T) {
	ctx := context.Background()
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, `<a href="/p%d">%d</a>`, i, i)
	}
	// Past the bound: repeats of kept links and links that lead nowhere
	// are not dropped links.
	b.WriteString(`<a href="http://example.com/p0">again</a><a href="#top">top</a><a href="javascript:x()">js</a><a href="mailto:a@b">m</a>`)
	b.WriteString(`<a href="/nofollowed" rel="nofollow">nf</a>`)
	p := htmlPage(t, "http://example.com/", b.String())

	reg := fetch.NewRegistry()
	reg.MaxLinks = 3
	links, dropped, err := reg.ExtractLimited(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(urls(links), " "); got != "http://example.com/p0 http://example.com/p1 http://example.com/p2" || dropped != 7 {
		t.Errorf("MaxLinks 3: %s, dropped %d; want p0-p2, 7 dropped", got, dropped)
	}

	// A custom extractor's links count against the same bound.
	reg.Register("text/html", fetch.ExtractorFunc(func(context.Context, *fetch.Page) ([]fetch.Link, error) {
		return []fetch.Link{{URL: "http://example.com/p1"}, {URL: "http://example.com/custom"}, {URL: "http://example.com/more"}}, nil
	}))
	reg.MaxLinks = 11
	links, dropped, _ = reg.ExtractLimited(ctx, p)
	if len(links) != 11 || links[10].URL != "http://example.com/custom" || dropped != 1 {
		t.Errorf("MaxLinks 11 with a custom extractor: %v, dropped %d", urls(links), dropped)
	}

	unbounded := fetch.NewRegistry()
	unbounded.MaxLinks = -1
	if links, dropped, _ := unbounded.ExtractLimited(ctx, p); len(links) != 10 || dropped != 0 {
		t.Errorf("no bound: %d links, %d dropped", len(links), dropped)
	}

	own, err := fetch.HTMLExtractor{MaxLinks: 2}.Extract(ctx, p)
	if err != nil || len(own) != 2 {
		t.Errorf("HTMLExtractor MaxLinks 2: %v, %v", urls(own), err)
	}
	// Under a Registry, the extractor's own bound still holds.
	small := &fetch.Registry{}
	small.Register("text/html", fetch.HTMLExtractor{MaxLinks: 4})
	if links, dropped, _ := small.ExtractLimited(ctx, p); len(links) != 4 || dropped != 6 {
		t.Errorf("HTMLExtractor MaxLinks 4 in a Registry: %d links, %d dropped", len(links), dropped)
	}
}

func TestDefaultMaxLinks(t *testing.T) {
	n := fetch.DefaultMaxLinks + 50
	p := htmlPage(t, "http://example.com/", string(manyLinksPageN(n)))
	links, dropped, err := fetch.NewRegistry().ExtractLimited(context.Background(), p)
	if err != nil || len(links) != fetch.DefaultMaxLinks || dropped != 50 {
		t.Errorf("%d links: kept %d, dropped %d, %v", n, len(links), dropped, err)
	}
	if links, _ := (fetch.HTMLExtractor{}).Extract(context.Background(), p); len(links) != fetch.DefaultMaxLinks {
		t.Errorf("HTMLExtractor alone kept %d", len(links))
	}
}

func manyLinksPageN(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<a href=\"/p/%d\">L%d</a>\n", i, i)
	}
	return []byte(b.String())
}

// TestManyLinksMemory extracts a 10 MiB page of about 400,000 links and
// bounds what it allocates: the page that once took half a gigabyte.
func TestManyLinksMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("10 MiB page")
	}
	body := manyLinksPage(10 << 20)
	p := htmlPage(t, "http://example.com/", string(body))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	links, dropped, err := fetch.NewRegistry().ExtractLimited(context.Background(), p)
	runtime.ReadMemStats(&after)
	if err != nil || len(links) != fetch.DefaultMaxLinks || dropped < 300_000 {
		t.Fatalf("kept %d, dropped %d, %v", len(links), dropped, err)
	}
	perByte := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(body))
	t.Logf("%d bytes, %d links kept, %d dropped: %.2f bytes allocated per body byte", len(body), len(links), dropped, perByte)
	if perByte > 8 {
		t.Errorf("allocated %.1f bytes per body byte, want at most 8", perByte)
	}
}

func TestPanickingExtractorIsRecovered(t *testing.T) {
	sentinel := errors.New("broken extractor")
	for _, value := range []any{"boom", sentinel} {
		reg := fetch.NewRegistry()
		reg.Register("text/html", fetch.ExtractorFunc(func(context.Context, *fetch.Page) ([]fetch.Link, error) {
			panic(value)
		}))
		reg.Register("text/html", fetch.ExtractorFunc(func(context.Context, *fetch.Page) ([]fetch.Link, error) {
			return []fetch.Link{{URL: "http://example.com/after"}}, nil
		}))
		p := htmlPage(t, "http://example.com/", `<a href="/html">h</a>`)
		links, err := reg.Extract(context.Background(), p)
		if got := strings.Join(urls(links), " "); got != "http://example.com/html http://example.com/after" {
			t.Errorf("panic(%v): links %s, want the other extractors'", value, got)
		}
		if !errors.Is(err, fetch.ErrExtractorPanic) {
			t.Fatalf("panic(%v): err = %v, want ErrExtractorPanic", value, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, fmt.Sprint(value)) || !strings.Contains(msg, "TestPanickingExtractorIsRecovered") {
			t.Errorf("panic(%v): error lacks the value or the stack:\n%s", value, msg)
		}
		if value == sentinel && !errors.Is(err, sentinel) {
			t.Errorf("a panic with an error value does not wrap it: %v", err)
		}
	}
}

func TestRegistryResolvesCustomExtractorLinks(t *testing.T) {
	reg := &fetch.Registry{}
	reg.Register("application/json", fetch.ExtractorFunc(func(context.Context, *fetch.Page) ([]fetch.Link, error) {
		var out []fetch.Link
		for _, u := range []string{
			"/go?to=https://x", "relative/path", " https://abs.example/x#frag ", "//other.example/p",
			"javascript:alert(1)", "http://[bad", "ftp://files.example/f", "#only", "", "mailto:a@b",
			"https://abs.example/x",
		} {
			out = append(out, fetch.Link{URL: u, Tag: "json"})
		}
		return out, nil
	}))
	p := htmlPage(t, "http://example.com/dir/page", `{}`)
	p.ContentType = "application/json"
	links, err := reg.Extract(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := "http://example.com/go?to=https://x http://example.com/dir/relative/path https://abs.example/x http://other.example/p"
	if got := strings.Join(urls(links), " "); got != want {
		t.Errorf("links:\n%s\nwant\n%s", got, want)
	}
}

func TestSharedDefinitionsWithRobots(t *testing.T) {
	if !errors.Is(fetch.ErrTooManyRedirects, gate.ErrTooManyRedirects) || !errors.Is(gate.ErrTooManyRedirects, fetch.ErrTooManyRedirects) {
		t.Error("fetch.ErrTooManyRedirects is not gate.ErrTooManyRedirects")
	}
	// Agent-scoped directives use robots.txt's product tokens: a full
	// User-Agent string names its crawler, "*" names every crawler.
	for _, c := range []struct {
		agents  []string
		value   string
		noindex bool
	}{
		{[]string{"MyBot/2.0 (+https://mybot.example/)"}, "mybot: noindex", true},
		{[]string{"MyBot/2.0"}, "otherbot: noindex", false},
		{nil, "*: noindex", true},
		{nil, "unavailable_after: 25 Jun 2010 15:00:00 PST", false},
	} {
		p := &fetch.Page{Header: http.Header{"X-Robots-Tag": {c.value}}, Policy: fetch.DirectivePolicy{Agents: c.agents}}
		if got := p.Directives().Noindex; got != c.noindex {
			t.Errorf("agents %q, X-Robots-Tag %q: noindex %v, want %v", c.agents, c.value, got, c.noindex)
		}
	}
}
