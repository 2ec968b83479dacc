package metrics

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heedcrawl/heed/crawler"
)

// gather collects m through a pedantic registry, which checks every metric
// against its descriptor, and returns "name{label="value"}" → value for its
// counters and gauges.
func gather(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			key := f.GetName()
			for _, l := range s.GetLabel() {
				key += fmt.Sprintf("{%s=%q}", l.GetName(), l.GetValue())
			}
			switch {
			case s.Counter != nil:
				out[key] = s.GetCounter().GetValue()
			case s.Gauge != nil:
				out[key] = s.GetGauge().GetValue()
			}
		}
	}
	return out
}

func fixed(t *testing.T, s crawler.Stats) *Metrics {
	t.Helper()
	m, err := newMetrics(func(context.Context) (crawler.Stats, error) { return s, nil })
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStatsMapping gives every Stats field a different value and checks
// where each one lands, so that no two fields are swapped.
func TestStatsMapping(t *testing.T) {
	s := crawler.Stats{
		Started:            time.Unix(1700000000, 500_000_000),
		Elapsed:            90 * time.Second,
		Pages:              1000, // the sum of Statuses, not exported by itself
		Bytes:              2,
		Statuses:           map[int]int64{200: 3, 204: 4, 301: 5, 404: 6, 503: 7, 999: 8, 101: 9},
		Errors:             map[crawler.ErrorKind]int64{crawler.FailedTimeout: 10, crawler.FailedDNS: 11},
		Retries:            12,
		Disallowed:         13,
		RobotsOutcomes:     map[string]int64{"ok": 14, "unreachable": 15},
		SkippedLinks:       map[crawler.SkipReason]int64{crawler.SkippedSeen: 16, crawler.SkippedScope: 17},
		Nofollow:           18,
		Noindex:            19,
		Sitemaps:           20,
		SitemapURLs:        21,
		CrawlDelayHosts:    22,
		MaxCrawlDelay:      23 * time.Second,
		Revisits:           31,
		RevisitChanges:     32,
		NotModified:        33,
		BytesSaved:         34,
		RevisitsDropped:    35,
		SitemapLastmods:    36,
		Rendered:           37,
		RenderFailed:       38,
		RenderTime:         39 * time.Second,
		Subrequests:        40,
		SubrequestsCached:  41,
		SubrequestsRefused: 42,
		RenderSkipped:      43,
		RenderChecked:      44,
		RenderMissed:       45,
		Queued:             24,
		InFlight:           25,
		Hosts:              26,
		HostsActive:        27,
		HostsWaiting:       28,
		HostsReady:         29,
		HostsResting:       30,
	}
	want := map[string]float64{
		"heed_crawl_start_time_seconds":                    1700000000.5,
		"heed_crawl_elapsed_seconds":                       90,
		"heed_page_bytes_total":                            2,
		`heed_pages_total{class="1xx"}`:                    9,
		`heed_pages_total{class="2xx"}`:                    7,
		`heed_pages_total{class="3xx"}`:                    5,
		`heed_pages_total{class="4xx"}`:                    6,
		`heed_pages_total{class="5xx"}`:                    7,
		`heed_pages_total{class="other"}`:                  8,
		`heed_errors_total{kind="timeout"}`:                10,
		`heed_errors_total{kind="dns"}`:                    11,
		"heed_retries_total":                               12,
		"heed_disallowed_urls_total":                       13,
		`heed_robots_fetches_total{outcome="ok"}`:          14,
		`heed_robots_fetches_total{outcome="unreachable"}`: 15,
		`heed_skipped_links_total{reason="seen"}`:          16,
		`heed_skipped_links_total{reason="scope"}`:         17,
		"heed_nofollow_pages_total":                        18,
		"heed_noindex_pages_total":                         19,
		"heed_sitemaps_total":                              20,
		"heed_sitemap_urls_total":                          21,
		"heed_crawl_delay_hosts_total":                     22,
		"heed_crawl_delay_max_seconds":                     23,
		"heed_queued_urls":                                 24,
		"heed_urls_in_flight":                              25,
		"heed_hosts_with_work":                             26,
		"heed_hosts_active":                                27,
		"heed_hosts_waiting":                               28,
		"heed_hosts_ready":                                 29,
		"heed_hosts_resting":                               30,
		"heed_revisits_total":                              31,
		"heed_revisit_changes_total":                       32,
		"heed_not_modified_total":                          33,
		"heed_revisit_bytes_saved_total":                   34,
		"heed_revisits_dropped_total":                      35,
		"heed_sitemap_lastmods_total":                      36,
		"heed_rendered_pages_total":                        37,
		"heed_render_failures_total":                       38,
		"heed_render_seconds":                              39,
		"heed_subrequests_total":                           40,
		"heed_subrequests_cached_total":                    41,
		"heed_subrequests_refused_total":                   42,
		"heed_render_skipped_total":                        43,
		"heed_render_checked_total":                        44,
		"heed_render_missed_total":                         45,
	}
	got := gather(t, fixed(t, s))
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected series %s = %v", k, v)
		}
	}
}

// TestZeroStats: before any Run, the counters are zero, the four usual
// status classes are there to rate from the first scrape, and no start
// time is made up.
func TestZeroStats(t *testing.T) {
	got := gather(t, fixed(t, crawler.Stats{}))
	for _, class := range []string{"2xx", "3xx", "4xx", "5xx"} {
		if v, ok := got[fmt.Sprintf("heed_pages_total{class=%q}", class)]; !ok || v != 0 {
			t.Errorf("class %s: %v (present %v), want 0", class, v, ok)
		}
	}
	if _, ok := got["heed_crawl_start_time_seconds"]; ok {
		t.Error("a start time is exported for a crawl that never started")
	}
	for k, v := range got {
		if v != 0 {
			t.Errorf("%s = %v, want 0", k, v)
		}
	}
}

// notExported lists the Stats fields no metric reads, with the reason.
var notExported = map[string]string{
	"Pages": "the sum of heed_pages_total over its classes",
}

// TestEveryStatsFieldIsExported sets one Stats field at a time and checks
// that the exposition changes: a field added to Stats without its line in
// statMetrics (or in notExported) fails here.
func TestEveryStatsFieldIsExported(t *testing.T) {
	zero := gather(t, fixed(t, crawler.Stats{}))
	typ := reflect.TypeFor[crawler.Stats]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		if _, ok := notExported[f.Name]; ok {
			continue
		}
		var s crawler.Stats
		v := reflect.ValueOf(&s).Elem().Field(i)
		switch {
		case f.Type == reflect.TypeFor[time.Time]():
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
		case v.CanInt():
			v.SetInt(7)
		case v.CanUint():
			v.SetUint(7)
		case v.CanFloat():
			v.SetFloat(7)
		case v.Kind() == reflect.Bool:
			v.SetBool(true)
		case v.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Int64:
			m := reflect.MakeMap(f.Type)
			key := reflect.New(f.Type.Key()).Elem()
			switch {
			case key.Kind() == reflect.String:
				key.SetString("some")
			case key.CanInt():
				key.SetInt(200)
			default:
				t.Fatalf("Stats.%s: no test value for a map keyed by %s", f.Name, f.Type.Key())
			}
			m.SetMapIndex(key, reflect.ValueOf(int64(7)))
			v.Set(m)
		default:
			t.Fatalf("Stats.%s: no test value for %s; give it one here", f.Name, f.Type)
		}
		got := gather(t, fixed(t, s))
		var changed []string
		for k, val := range got {
			if z, ok := zero[k]; !ok || z != val {
				changed = append(changed, k)
			}
		}
		if len(changed) == 0 {
			t.Errorf("Stats.%s is in no metric: add it to statMetrics, or to notExported with a reason", f.Name)
		} else {
			slices.Sort(changed)
			t.Logf("Stats.%s → %s", f.Name, strings.Join(changed, ", "))
		}
	}
}

func TestStatusClass(t *testing.T) {
	for code, want := range map[int]string{
		0: "other", 99: "other", 100: "1xx", 200: "2xx", 299: "2xx", 304: "3xx",
		429: "4xx", 599: "5xx", 600: "other", 999: "other", -1: "other",
	} {
		if got := statusClass(code); got != want {
			t.Errorf("statusClass(%d) = %q, want %q", code, got, want)
		}
	}
}

// TestStoreOutOfReach: when the Store does not answer, a scrape has the
// counters but leaves the queue's gauges out instead of reporting zeros.
func TestStoreOutOfReach(t *testing.T) {
	m, err := newMetrics(func(context.Context) (crawler.Stats, error) {
		return crawler.Stats{Pages: 3, Disallowed: 2}, errors.New("store out of reach")
	})
	if err != nil {
		t.Fatal(err)
	}
	got := gather(t, m)
	if got["heed_disallowed_urls_total"] != 2 {
		t.Errorf("heed_disallowed_urls_total = %v, want 2", got["heed_disallowed_urls_total"])
	}
	for _, name := range []string{"heed_queued_urls", "heed_urls_in_flight", "heed_hosts_with_work", "heed_hosts_active", "heed_hosts_waiting", "heed_hosts_ready", "heed_hosts_resting"} {
		if v, ok := got[name]; ok {
			t.Errorf("%s = %v with the Store out of reach, want it left out", name, v)
		}
	}
}
