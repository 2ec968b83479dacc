package render_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/render"
	"github.com/heedcrawl/heed/internal/chromiumtest"
)

// site is a small application: a shell whose script builds the links, a
// fetch() to a path the policy refuses, images, and a request log.
type site struct {
	*httptest.Server
	mu  sync.Mutex
	log []string
}

func newSite(t *testing.T) *site {
	s := &site{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!DOCTYPE html><html><head><script src="/app.js"></script></head><body><img src="/logo.png"><div id="app"></div></body></html>`)
	})
	mux.HandleFunc("/app.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Header().Set("Cache-Control", "max-age=3600")
		fmt.Fprint(w, `addEventListener('DOMContentLoaded', async () => {
  const app = document.getElementById('app');
  try { await fetch('/private/secret'); } catch (e) { app.insertAdjacentHTML('beforeend', '<p id="refused">refused</p>'); }
  const r = await fetch('/api/items');
  for (const it of await r.json()) app.insertAdjacentHTML('beforeend', '<a href="/item/' + it + '">' + it + '</a>');
  history.pushState({}, '', '/app/list/');
  app.insertAdjacentHTML('beforeend', '<a href="rel">rel</a>');
});`)
	})
	mux.HandleFunc("/api/items", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `["a","b","c"]`)
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.URL.Path+" "+r.UserAgent())
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.log {
		if strings.HasPrefix(l, path+" ") {
			n++
		}
	}
	return n
}

// politeTest fetches with a Fetcher and refuses /private/.
func politeTest(f *fetch.Fetcher) render.Policy {
	return render.PolicyFunc(func(ctx context.Context, req render.Request) (*fetch.Page, error) {
		if strings.HasPrefix(req.URL.Path, "/private/") {
			return nil, render.ErrRefused
		}
		return f.Fetch(ctx, fetch.Request{URL: req.URL.String(), Header: req.Header})
	})
}

func TestRenderBuildsLinksAndRefuses(t *testing.T) {
	bin := chromiumtest.Path(t)
	s := newSite(t)
	f := &fetch.Fetcher{UserAgent: "heedtest/1"}
	doc, err := f.Fetch(context.Background(), fetch.Request{URL: s.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	r := &render.Renderer{ExecPath: bin, Tabs: 2}
	defer r.Close()
	res, err := r.Render(context.Background(), doc, politeTest(f))
	if err != nil {
		t.Fatal(err)
	}
	html := string(res.Page.Body)
	for _, want := range []string{`href="/item/a"`, `href="/item/c"`, `id="refused"`, `<base href="` + s.URL + `/app/list/">`} {
		if !strings.Contains(html, want) {
			t.Errorf("rendered DOM lacks %s:\n%s", want, html)
		}
	}
	if got := s.requests("/private/secret"); got != 0 {
		t.Errorf("refused path reached the server %d times", got)
	}
	if got := s.requests("/logo.png"); got != 0 {
		t.Errorf("image reached the server %d times", got)
	}
	if got := s.requests("/"); got != 1 {
		t.Errorf("document fetched %d times, want once (by heed)", got)
	}
	if res.Refused != 1 || res.Blocked < 1 || res.Requests != 2 {
		t.Errorf("counts: %+v", res)
	}
	s.mu.Lock()
	for _, l := range s.log {
		if !strings.HasSuffix(l, " heedtest/1") {
			t.Errorf("request not made by heed's fetcher: %s", l)
		}
	}
	s.mu.Unlock()

	// A second page shares app.js through the cache.
	res2, err := r.Render(context.Background(), doc, politeTest(f))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.requests("/app.js"); got != 1 {
		t.Errorf("app.js fetched %d times for two pages, want 1", got)
	}
	if res2.Cached != 1 {
		t.Errorf("second render: %d cached, want 1", res2.Cached)
	}
}
