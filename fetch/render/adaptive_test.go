package render_test

import (
	"net/url"
	"testing"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/fetch/render"
)

func htmlPage(body string) *fetch.Page {
	u, _ := url.Parse("http://example.com/")
	return &fetch.Page{URL: u, Status: 200, ContentType: "text/html", Body: []byte(body)}
}

func TestAdaptive(t *testing.T) {
	shell := render.Measure(htmlPage(`<div id="app">Loading</div><script src="/app.js"></script>`))
	built := render.Measure(htmlPage(`<div id="app"><a href="/a">a</a></div>`))
	static := render.Measure(htmlPage(`<p>text</p><a href="/a">a</a>`))
	a := &render.Adaptive{Probes: 2, Recheck: 5}
	// A shell host: its first page is compared, found to gain, rendered.
	if got := a.Choose("shell"); got != render.Compare {
		t.Fatalf("first page: %v, want Compare", got)
	}
	a.Observe("shell", shell, built)
	for i := 2; i <= 4; i++ {
		if got := a.Choose("shell"); got != render.Always {
			t.Errorf("shell page %d: %v, want Always", i, got)
		}
	}
	if got := a.Choose("shell"); got != render.Compare {
		t.Errorf("shell page 5: %v, want a recheck (Compare)", got)
	}
	// A static host: its probes gain nothing; it is skipped, and
	// rechecked now and then.
	for i := 1; i <= 2; i++ {
		if got := a.Choose("static"); got != render.Compare {
			t.Fatalf("static probe %d: %v, want Compare", i, got)
		}
		a.Observe("static", static, static)
	}
	for i := 3; i <= 4; i++ {
		if got := a.Choose("static"); got != render.Skip {
			t.Errorf("static page %d: %v, want Skip", i, got)
		}
	}
	if got := a.Choose("static"); got != render.Compare {
		t.Errorf("static page 5: %v, want a recheck (Compare)", got)
	}
	// The recheck finds the host now builds its pages by script.
	a.Observe("static", static, render.Measure(htmlPage(`<p>text</p><a href="/a">a</a><a href="/new">new</a>`)))
	if got := a.Choose("static"); got != render.Always {
		t.Errorf("after a recheck that gained: %v, want Always", got)
	}
}
