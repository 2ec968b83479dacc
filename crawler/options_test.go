package crawler

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/fetch"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/ratelimit"
)

// TestBadOptionValues: every bad value, zero included where zero is not a
// value the option can take, is an *OptionError naming the option and
// wrapping ErrInvalidOption.
func TestBadOptionValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []Option
		option string // the option the error must name
	}{
		{"empty agent", []Option{WithAgent("")}, "WithAgent"},
		{"agent with slash", []Option{WithAgent("bot/1.0")}, "WithAgent"},
		{"empty User-Agent", []Option{WithUserAgent("")}, "WithUserAgent"},
		{"zero workers", []Option{WithWorkers(0)}, "WithWorkers"},
		{"zero per host", []Option{WithPerHost(0)}, "WithPerHost"},
		{"negative delay", []Option{WithDelay(-time.Second)}, "WithDelay"},
		{"zero max delay", []Option{WithMaxDelay(0)}, "WithMaxDelay"},
		{"max below min", []Option{WithDelay(2 * time.Second), WithMaxDelay(time.Second)}, "WithMaxDelay"},
		{"negative adaptive", []Option{WithAdaptiveDelay(-1)}, "WithAdaptiveDelay"},
		{"NaN adaptive", []Option{WithAdaptiveDelay(math.NaN())}, "WithAdaptiveDelay"},
		{"unknown key", []Option{WithPolitenessKey(99)}, "WithPolitenessKey"},
		{"unknown scope", []Option{WithScope(99)}, "WithScope"},
		{"nil scope func", []Option{WithScopeFunc(nil)}, "WithScopeFunc"},
		{"zero depth", []Option{WithMaxDepth(0)}, "WithMaxDepth"},
		{"negative depth", []Option{WithMaxDepth(-2)}, "WithMaxDepth"},
		{"zero pages", []Option{WithMaxPages(0)}, "WithMaxPages"},
		{"negative pages", []Option{WithMaxPages(-2)}, "WithMaxPages"},
		{"zero host pages", []Option{WithMaxPagesPerHost(0)}, "WithMaxPagesPerHost"},
		{"zero connect timeout", []Option{WithConnectTimeout(0)}, "WithConnectTimeout"},
		{"negative header timeout", []Option{WithHeaderTimeout(-1)}, "WithHeaderTimeout"},
		{"zero fetch timeout", []Option{WithFetchTimeout(0)}, "WithFetchTimeout"},
		{"zero body limit", []Option{WithBodyLimit(0)}, "WithBodyLimit"},
		{"nil client", []Option{WithHTTPClient(nil)}, "WithHTTPClient"},
		{"nil transport", []Option{WithTransport(nil)}, "WithTransport"},
		{"nil clock", []Option{WithClock(nil)}, "WithClock"},
		{"negative grace", []Option{WithGracePeriod(-1)}, "WithGracePeriod"},
		{"zero robots cache", []Option{WithRobotsCacheSize(0)}, "WithRobotsCacheSize"},
		{"negative retries", []Option{WithRetries(-1)}, "WithRetries"},
		{"negative robots wait", []Option{WithRobotsWait(-1)}, "WithRobotsWait"},
		{"negative redirects", []Option{WithMaxRedirects(-1)}, "WithMaxRedirects"},
		{"nil extractor", []Option{WithExtractor("text/html", nil)}, "WithExtractor"},
		{"no media type", []Option{WithExtractors("")}, "WithExtractors"},
		{"nil among extractors", []Option{WithExtractors("text/html", nil)}, "WithExtractors"},
		{"zero links", []Option{WithMaxLinks(0)}, "WithMaxLinks"},
		{"zero sitemaps", []Option{WithMaxSitemaps(0)}, "WithMaxSitemaps"},
		{"zero sitemap URLs", []Option{WithMaxSitemapURLs(0)}, "WithMaxSitemapURLs"},
		{"negative sitemap depth", []Option{WithMaxSitemapDepth(-2)}, "WithMaxSitemapDepth"},
		{"zero path segments", []Option{WithMaxPathSegments(0)}, "WithMaxPathSegments"},
		{"negative path segments", []Option{WithMaxPathSegments(-5)}, "WithMaxPathSegments"},
		{"zero segment repeats", []Option{WithMaxSegmentRepeats(0)}, "WithMaxSegmentRepeats"},
		{"zero host failures", []Option{WithHostFailures(0)}, "WithHostFailures"},
		{"nil store", []Option{WithStore(nil)}, "WithStore"},
		{"nil checkpoint", []Option{WithCheckpoint(nil)}, "WithCheckpoint"},
		{"nil recorder", []Option{WithWARC(nil)}, "WithWARC"},
		{"WARC with transport", []Option{WithWARC(nopRecorder{}), WithTransport(nopTransport{})}, "WithWARC"},
		{"zero lease", []Option{WithLease(0)}, "WithLease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.opts...)
			var oe *OptionError
			if !errors.Is(err, ErrInvalidOption) || !errors.As(err, &oe) {
				t.Fatalf("New = %v, %v; want an *OptionError wrapping ErrInvalidOption", c, err)
			}
			if oe.Option != tc.option || !strings.Contains(err.Error(), tc.option) {
				t.Errorf("error %q names %q, want %s", err, oe.Option, tc.option)
			}
		})
	}
}

// TestOptionZeroAndNoLimit: a zero an option takes means the number zero
// (no delay, no redirect, no grace, no nesting...), never the default nor
// no limit; NoLimit lifts a limit. Each is checked where the crawler hands
// it to the package that acts on it.
func TestOptionZeroAndNoLimit(t *testing.T) {
	store := new(frontier.MemoryStore)
	for _, tc := range []struct {
		name  string
		opts  []Option
		check func(t *testing.T, cfg *config)
	}{
		{"delay 0 is no delay", []Option{WithDelay(0)}, func(t *testing.T, cfg *config) {
			if d := pacedDelay(t, cfg); d != 0 {
				t.Errorf("a host's delay %v, want 0", d)
			}
		}},
		{"default delay", nil, func(t *testing.T, cfg *config) {
			if d := pacedDelay(t, cfg); d != DefaultMinDelay {
				t.Errorf("a host's delay %v, want %v", d, DefaultMinDelay)
			}
		}},
		{"max redirects 0 follows none", []Option{WithMaxRedirects(0)}, func(t *testing.T, cfg *config) {
			if f := crawlFetcher(cfg, nil); f.MaxRedirects != fetch.NoRedirects {
				t.Errorf("fetcher MaxRedirects %d, want fetch.NoRedirects", f.MaxRedirects)
			}
		}},
		{"retries 0", []Option{WithRetries(0)}, func(t *testing.T, cfg *config) {
			if cfg.pageRetries != 0 {
				t.Errorf("retries %d", cfg.pageRetries)
			}
		}},
		{"grace 0", []Option{WithGracePeriod(0)}, func(t *testing.T, cfg *config) {
			if cfg.grace != 0 {
				t.Errorf("grace %v", cfg.grace)
			}
		}},
		{"sitemap depth 0 reads roots only", []Option{WithMaxSitemapDepth(0)}, func(t *testing.T, cfg *config) {
			if cfg.maxSitemapNest != 0 {
				t.Errorf("sitemap nesting bound %d, want 0", cfg.maxSitemapNest)
			}
		}},
		{"sitemap depth NoLimit", []Option{WithMaxSitemapDepth(NoLimit)}, func(t *testing.T, cfg *config) {
			if cfg.maxSitemapNest != math.MaxInt {
				t.Errorf("sitemap nesting bound %d, want unbounded", cfg.maxSitemapNest)
			}
		}},
		{"limits default", nil, func(t *testing.T, cfg *config) {
			fc := frontierConfig(cfg, store, nil)
			if fc.MaxDepth != 0 || fc.Limits.MaxPages != 0 || fc.Limits.MaxPagesPerHost != 0 {
				t.Errorf("frontier depth %d, pages %d, per host %d; want 0 (the frontier's no limit)", fc.MaxDepth, fc.Limits.MaxPages, fc.Limits.MaxPagesPerHost)
			}
			if fc.Limits.MaxSitemapsPerHost != DefaultMaxSitemaps || fc.Limits.MaxSitemapURLsPerHost != DefaultMaxSitemapURLs {
				t.Errorf("frontier sitemap limits %+v", fc.Limits)
			}
			if fc.MaxPathSegments != DefaultMaxPathSegments || fc.MaxSegmentRepeats != DefaultMaxSegmentRepeats {
				t.Errorf("frontier path limits %d, %d", fc.MaxPathSegments, fc.MaxSegmentRepeats)
			}
			if reg := newRegistry(cfg); reg.MaxLinks != DefaultMaxLinks {
				t.Errorf("registry MaxLinks %d", reg.MaxLinks)
			}
			if cfg.hostFailures != DefaultHostFailures {
				t.Errorf("host failures %d", cfg.hostFailures)
			}
		}},
		{"limits set", []Option{WithMaxDepth(3), WithMaxPages(7), WithMaxPagesPerHost(5), WithMaxSitemaps(2), WithMaxSitemapURLs(9), WithMaxPathSegments(4), WithMaxSegmentRepeats(1), WithMaxLinks(6)}, func(t *testing.T, cfg *config) {
			fc := frontierConfig(cfg, store, nil)
			if fc.MaxDepth != 3 || fc.Limits != (frontier.Limits{MaxPages: 7, MaxPagesPerHost: 5, MaxSitemapsPerHost: 2, MaxSitemapURLsPerHost: 9}) {
				t.Errorf("frontier depth %d, limits %+v", fc.MaxDepth, fc.Limits)
			}
			if fc.MaxPathSegments != 4 || fc.MaxSegmentRepeats != 1 || newRegistry(cfg).MaxLinks != 6 {
				t.Errorf("path limits %d, %d, links %d", fc.MaxPathSegments, fc.MaxSegmentRepeats, newRegistry(cfg).MaxLinks)
			}
		}},
		{"NoLimit lifts every limit", []Option{WithMaxDepth(NoLimit), WithMaxPages(NoLimit), WithMaxPagesPerHost(NoLimit),
			WithMaxSitemaps(NoLimit), WithMaxSitemapURLs(NoLimit), WithMaxPathSegments(NoLimit), WithMaxSegmentRepeats(NoLimit),
			WithMaxLinks(NoLimit), WithHostFailures(NoLimit)}, func(t *testing.T, cfg *config) {
			fc := frontierConfig(cfg, store, nil)
			if fc.MaxDepth != 0 || fc.Limits != (frontier.Limits{}) {
				t.Errorf("frontier depth %d, limits %+v; want zeros, the frontier's no limit", fc.MaxDepth, fc.Limits)
			}
			if fc.MaxPathSegments >= 0 || fc.MaxSegmentRepeats >= 0 {
				t.Errorf("path limits %d, %d; want negative, the frontier's check off", fc.MaxPathSegments, fc.MaxSegmentRepeats)
			}
			if reg := newRegistry(cfg); reg.MaxLinks >= 0 {
				t.Errorf("registry MaxLinks %d, want negative, fetch's no bound", reg.MaxLinks)
			}
			if cfg.hostFailures != NoLimit {
				t.Errorf("host failures %d, want NoLimit (never given up)", cfg.hostFailures)
			}
		}},
		{"zero Canonicalizer sorts the query", []Option{WithCanonicalizer(frontier.Canonicalizer{})}, func(t *testing.T, cfg *config) {
			cz := frontierConfig(cfg, store, nil).Canonicalizer
			got, err := cz.Canonical("http://a.example/?b=2&a=1")
			if want := "http://a.example/?a=1&b=2"; err != nil || got != want {
				t.Errorf("Canonical = %q, %v; want %q", got, err, want)
			}
		}},
		{"default lease", nil, func(t *testing.T, cfg *config) {
			if cfg.lease != frontier.DefaultLease || frontierConfig(cfg, store, nil).Claim.Lease != frontier.DefaultLease {
				t.Errorf("lease %v, want frontier.DefaultLease", cfg.lease)
			}
		}},
		{"lease is a liveness timeout, not bound to the fetch timeout", []Option{WithFetchTimeout(4 * time.Minute), WithLease(5 * time.Second)}, func(t *testing.T, cfg *config) {
			if cfg.lease != 5*time.Second {
				t.Errorf("lease %v, want 5s", cfg.lease)
			}
		}},
		{"nil logger discards", []Option{WithLogger(nil)}, func(t *testing.T, cfg *config) {
			if cfg.logger == nil || cfg.logger.Enabled(t.Context(), -8) {
				t.Errorf("logger %v, want one that discards", cfg.logger)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c.settings())
		})
	}
}

// pacedDelay is the delay the crawl's pacing policy gives a host it knows
// nothing else of.
func pacedDelay(t *testing.T, cfg *config) time.Duration {
	t.Helper()
	pol, _, err := newPacing(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, _, _ := pol.Delay(ratelimit.HostState{})
	return d
}

type nopRecorder struct{}

func (nopRecorder) Record(context.Context, *fetch.Exchange) error { return nil }

type nopTransport struct{}

func (nopTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no network here")
}
