package crawler_test

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/internal/testweb"
)

func TestEndToEndVirtualWeb(t *testing.T) {
	v, err := testweb.NewVirtual(testweb.Config{Hosts: 8, PagesPerHost: 30, CrawlDelay: 30 * time.Millisecond, Trap: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	truth, err := v.Truth()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var disallowed []string
	c, err := crawler.New(
		crawler.WithTransport(v.Transport()),
		crawler.WithDelay(30*time.Millisecond),
		crawler.WithScope(frontier.ScopeAny),
		crawler.WithMaxDepth(truth.MaxDepth),
	)
	if err != nil {
		t.Fatal(err)
	}
	c.OnDisallowed(func(ctx context.Context, u *url.URL, why crawler.DisallowReason) {
		mu.Lock()
		disallowed = append(disallowed, u.String())
		mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Run(ctx, v.Web.Seeds()...); err != nil {
		t.Errorf("Run: %v; stats %+v", err, c.Stats())
	}
	rep := truth.Analyze(v.Log.Entries(), testweb.AnalyzeOptions{MinDelay: 30 * time.Millisecond})
	t.Logf("report:\n%s", rep)
	t.Logf("stats: %+v", c.Stats())
	if err := rep.Check(); err != nil {
		t.Error(err)
	}
}
