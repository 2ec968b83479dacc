// Package metrics exposes a crawl's counters to Prometheus.
//
// New hooks a collector onto a crawler.Crawler: every scrape reads one
// crawler.Stats snapshot and turns it into heed_* metrics, and an OnPage
// handler records each page's fetch time and size in histograms. The
// package lives apart from crawler so that crawler does not depend on
// Prometheus.
//
// No metric carries a host, URL or any other label of unbounded
// cardinality: labels are the status class ("2xx"…), error kind, skip
// reason and robots.txt outcome, each a small fixed set.
//
// The counters read from Stats belong to one Run: a new Run of the same
// Crawler starts them from zero again, which Prometheus takes for a counter
// reset. The histograms are the Metrics' own and accumulate over every Run.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heedcrawl/heed/crawler"
)

// ErrInvalidOption is wrapped by the error New returns for a bad argument.
var ErrInvalidOption = errors.New("metrics: invalid option")

// Namespace prefixes every metric name the package exports.
const Namespace = "heed"

// defaultDurationBuckets are the upper bounds, in seconds, of the
// heed_fetch_duration_seconds histogram: from a loopback answer to
// fetch.DefaultTimeout.
func defaultDurationBuckets() []float64 {
	return []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
}

// defaultSizeBuckets are the upper bounds, in bytes, of the
// heed_page_size_bytes histogram: 1 KiB to 16 MiB by factors of 4, which
// covers fetch.DefaultMaxBodySize.
func defaultSizeBuckets() []float64 {
	return []float64{1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24}
}

// Option configures New.
type Option func(*options) error

type options struct {
	runtime         bool
	durationBuckets []float64
	sizeBuckets     []float64
}

// WithRuntimeMetrics makes Handler and Register also expose the Go runtime
// (go_*) and process (process_*) metrics of the program.
func WithRuntimeMetrics() Option {
	return func(o *options) error {
		o.runtime = true
		return nil
	}
}

// WithDurationBuckets sets the upper bounds, in seconds, of the fetch
// duration histogram's buckets. They must be strictly increasing. The
// default runs from 5 ms to 60 s (fetch.DefaultTimeout).
func WithDurationBuckets(bounds ...float64) Option {
	return func(o *options) error {
		if err := checkBuckets(bounds); err != nil {
			return fmt.Errorf("%w: duration buckets: %w", ErrInvalidOption, err)
		}
		o.durationBuckets = slices.Clone(bounds)
		return nil
	}
}

// WithSizeBuckets sets the upper bounds, in bytes, of the page size
// histogram's buckets. They must be strictly increasing. The default runs
// from 1 KiB to 16 MiB by factors of 4, past fetch.DefaultMaxBodySize.
func WithSizeBuckets(bounds ...float64) Option {
	return func(o *options) error {
		if err := checkBuckets(bounds); err != nil {
			return fmt.Errorf("%w: size buckets: %w", ErrInvalidOption, err)
		}
		o.sizeBuckets = slices.Clone(bounds)
		return nil
	}
}

// checkBuckets refuses what prometheus.NewHistogram would panic on.
func checkBuckets(bounds []float64) error {
	if len(bounds) == 0 {
		return errors.New("no bucket")
	}
	for i := 1; i < len(bounds); i++ {
		if !(bounds[i] > bounds[i-1]) {
			return fmt.Errorf("bounds not strictly increasing at %v", bounds[i])
		}
	}
	return nil
}

// Metrics is a prometheus.Collector for one Crawler. Create it with New;
// it is safe for concurrent use, scrapes included, during a crawl.
type Metrics struct {
	stats    func(context.Context) (crawler.Stats, error)
	fromStat []statMetric
	duration prometheus.Histogram
	size     prometheus.Histogram
	runtime  bool
	reg      *prometheus.Registry
	handler  http.Handler
}

// New returns the Metrics of c and registers an OnPage handler on c that
// records every page's fetch duration and size, from then on: a Metrics
// created during a Run reads the whole Run's Stats, but its histograms
// hold only the pages handled since.
func New(c *crawler.Crawler, opts ...Option) (*Metrics, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil crawler", ErrInvalidOption)
	}
	m, err := newMetrics(c.Stats, opts...)
	if err != nil {
		return nil, err
	}
	c.OnPage(m.observe)
	return m, nil
}

// newMetrics is New without the crawler: stats is what a scrape reads.
func newMetrics(stats func(context.Context) (crawler.Stats, error), opts ...Option) (*Metrics, error) {
	o := options{durationBuckets: defaultDurationBuckets(), sizeBuckets: defaultSizeBuckets()}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	m := &Metrics{
		stats:    stats,
		fromStat: statMetrics(),
		runtime:  o.runtime,
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace,
			Name:      "fetch_duration_seconds",
			Help:      "Time from sending a page request until its body was read, for pages that got a response.",
			Buckets:   o.durationBuckets,
		}),
		size: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace,
			Name:      "page_size_bytes",
			Help:      "Body bytes of a page read off the wire, before decompression.",
			Buckets:   o.sizeBuckets,
		}),
	}
	m.reg = prometheus.NewRegistry()
	if err := m.Register(m.reg); err != nil {
		return nil, fmt.Errorf("metrics: registering: %w", err)
	}
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m, nil
}

// observe is the OnPage handler.
func (m *Metrics) observe(_ context.Context, p *crawler.Page) {
	if p == nil || p.Page == nil {
		return
	}
	m.duration.Observe(p.Timings.Total.Seconds())
	m.size.Observe(float64(p.TransferSize))
}

// Describe sends the descriptors of every metric Collect may send.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, sm := range m.fromStat {
		ch <- sm.desc
	}
	m.duration.Describe(ch)
	m.size.Describe(ch)
}

// Collect sends the metrics of one Stats snapshot and the histograms. The
// queue's gauges come from the crawl's Store: when it does not answer
// within storeTimeout, a scrape leaves them out rather than report zeros.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	s, err := m.stats(ctx)
	cancel()
	for _, sm := range m.fromStat {
		if err != nil && sm.fromStore {
			continue
		}
		sm.collect(ch, &s)
	}
	m.duration.Collect(ch)
	m.size.Collect(ch)
}

// Register registers m with reg and, with WithRuntimeMetrics, the Go
// runtime and process collectors too, unless reg already has them (as
// prometheus.DefaultRegisterer does). It fails if reg already has m or a
// metric of the same name.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	if err := reg.Register(m); err != nil {
		return err
	}
	if !m.runtime {
		return nil
	}
	for _, rc := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		var already prometheus.AlreadyRegisteredError
		if err := reg.Register(rc); err != nil && !errors.As(err, &already) {
			return err
		}
	}
	return nil
}

// Handler returns an http.Handler serving m's metrics (and, with
// WithRuntimeMetrics, the Go runtime and process metrics) in the
// Prometheus exposition formats, for a /metrics endpoint. It uses a
// registry of its own, so it is independent of prometheus.DefaultRegisterer.
func (m *Metrics) Handler() http.Handler { return m.handler }

// storeTimeout bounds a scrape's wait for the Store's queue figures, so
// that a Store out of reach does not hold the scrape for its retry budget.
const storeTimeout = time.Second

// statMetric is one metric read from a Stats snapshot: a single value, or
// one value per key of a Stats map, the key as the label value.
type statMetric struct {
	desc    *prometheus.Desc
	kind    prometheus.ValueType
	value   func(s *crawler.Stats) float64
	byLabel func(s *crawler.Stats) iter.Seq2[string, int64]
	// present, when set, says whether the metric has a value at all.
	present func(s *crawler.Stats) bool
	// fromStore: the value is one of the Store's queue figures.
	fromStore bool
}

func (sm statMetric) collect(ch chan<- prometheus.Metric, s *crawler.Stats) {
	if sm.present != nil && !sm.present(s) {
		return
	}
	if sm.byLabel == nil {
		ch <- prometheus.MustNewConstMetric(sm.desc, sm.kind, sm.value(s))
		return
	}
	for label, v := range sm.byLabel(s) {
		ch <- prometheus.MustNewConstMetric(sm.desc, sm.kind, float64(v), label)
	}
}

func counter(name, help string, v func(s *crawler.Stats) int64) statMetric {
	return statMetric{
		desc:  prometheus.NewDesc(Namespace+"_"+name, help, nil, nil),
		kind:  prometheus.CounterValue,
		value: func(s *crawler.Stats) float64 { return float64(v(s)) },
	}
}

func counterBy(name, help, label string, v func(s *crawler.Stats) iter.Seq2[string, int64]) statMetric {
	return statMetric{
		desc:    prometheus.NewDesc(Namespace+"_"+name, help, []string{label}, nil),
		kind:    prometheus.CounterValue,
		byLabel: v,
	}
}

func gauge(name, help string, v func(s *crawler.Stats) float64) statMetric {
	return statMetric{
		desc:  prometheus.NewDesc(Namespace+"_"+name, help, nil, nil),
		kind:  prometheus.GaugeValue,
		value: v,
	}
}

// storeGauge is a gauge of the Store's queue figures.
func storeGauge(name, help string, v func(s *crawler.Stats) int) statMetric {
	g := gauge(name, help, func(s *crawler.Stats) float64 { return float64(v(s)) })
	g.fromStore = true
	return g
}

// statMetrics lists the metrics read from Stats; a new Stats field is one
// more line here.
func statMetrics() []statMetric {
	started := gauge("crawl_start_time_seconds", "When the current or last crawl started, in seconds since the Unix epoch.",
		func(s *crawler.Stats) float64 { return float64(s.Started.UnixNano()) / 1e9 })
	started.present = func(s *crawler.Stats) bool { return !s.Started.IsZero() }
	return append([]statMetric{
		started,
		gauge("crawl_elapsed_seconds", "How long the current crawl has run, or the last one ran.",
			func(s *crawler.Stats) float64 { return s.Elapsed.Seconds() }),

		counterBy("pages_total", "Responses received for pages, by status class.", "class",
			func(s *crawler.Stats) iter.Seq2[string, int64] { return labelled(statusClasses(s.Statuses)) }),
		counter("page_bytes_total", "Body bytes of pages read off the wire, before decompression.",
			func(s *crawler.Stats) int64 { return s.Bytes }),
		counterBy("errors_total", "Failed fetches and other problems, by kind.", "kind",
			func(s *crawler.Stats) iter.Seq2[string, int64] { return labelled(s.Errors) }),
		counter("retries_total", "Pages scheduled again after a failure.",
			func(s *crawler.Stats) int64 { return s.Retries }),

		counterBy("robots_fetches_total", "robots.txt fetches, by outcome: ok; unavailable (4xx: no robots.txt, all allowed); unreachable (5xx, 429 or network error: all disallowed); stale (unreachable, an earlier copy applies); assumed-allow (unreachable for long: all allowed).", "outcome",
			func(s *crawler.Stats) iter.Seq2[string, int64] { return labelled(s.RobotsOutcomes) }),
		counter("disallowed_urls_total", "URLs robots.txt did not let the crawler fetch.",
			func(s *crawler.Stats) int64 { return s.Disallowed }),
		counterBy("skipped_links_total", "Links not scheduled or not fetched, by reason; each occurrence of a URL on a page or in a sitemap counts.", "reason",
			func(s *crawler.Stats) iter.Seq2[string, int64] { return labelled(s.SkippedLinks) }),
		counter("nofollow_pages_total", "Pages whose links were not followed because of a nofollow directive.",
			func(s *crawler.Stats) int64 { return s.Nofollow }),
		counter("noindex_pages_total", "Pages that asked not to be indexed.",
			func(s *crawler.Stats) int64 { return s.Noindex }),

		counter("sitemaps_total", "Sitemap documents read.",
			func(s *crawler.Stats) int64 { return s.Sitemaps }),
		counter("sitemap_urls_total", "Page URLs listed by the sitemaps read.",
			func(s *crawler.Stats) int64 { return s.SitemapURLs }),

		counter("crawl_delay_hosts_total", "Hosts whose robots.txt set a Crawl-delay for the crawler.",
			func(s *crawler.Stats) int64 { return s.CrawlDelayHosts }),
		gauge("crawl_delay_max_seconds", "The longest Crawl-delay applied to a host, after the crawler's cap.",
			func(s *crawler.Stats) float64 { return s.MaxCrawlDelay.Seconds() }),

		counter("revisits_total", "Answers for pages fetched before (WithRevisit).",
			func(s *crawler.Stats) int64 { return s.Revisits }),
		counter("revisit_changes_total", "Revisits that found the page changed.",
			func(s *crawler.Stats) int64 { return s.RevisitChanges }),
		counter("not_modified_total", "304 Not Modified answers to conditional revisits.",
			func(s *crawler.Stats) int64 { return s.NotModified }),
		counter("revisit_bytes_saved_total", "Body bytes 304 answers saved against unconditional fetches: the size of each version held.",
			func(s *crawler.Stats) int64 { return s.BytesSaved }),
		counter("revisits_dropped_total", "Pages no longer revisited: moved, gone repeatedly, or now disallowed by robots.txt.",
			func(s *crawler.Stats) int64 { return s.RevisitsDropped }),
		counter("sitemap_lastmods_total", "Sitemap <lastmod>s of pages held handed to their queued revisits.",
			func(s *crawler.Stats) int64 { return s.SitemapLastmods }),

		storeGauge("queued_urls", "URLs waiting to be fetched.",
			func(s *crawler.Stats) int { return s.Queued }),
		storeGauge("urls_in_flight", "URLs being worked on: waiting for robots.txt, being fetched or handled.",
			func(s *crawler.Stats) int { return s.InFlight }),
		storeGauge("hosts_with_work", "Hosts with queued or in-flight URLs.",
			func(s *crawler.Stats) int { return s.Hosts }),
		storeGauge("hosts_active", "Hosts with a request in flight.",
			func(s *crawler.Stats) int { return s.HostsActive }),
		storeGauge("hosts_waiting", "Hosts with work waiting for their turn: their delay, a back-off or a free worker.",
			func(s *crawler.Stats) int { return s.HostsWaiting }),
		storeGauge("hosts_ready", "Hosts with queued URLs that may be fetched now and wait for a free worker.",
			func(s *crawler.Stats) int { return s.HostsReady }),
		storeGauge("hosts_resting", "Hosts with queued URLs resting: their delay, a back-off or a Retry-After.",
			func(s *crawler.Stats) int { return s.HostsResting }),
	}, renderMetrics()...)
}

// renderMetrics lists the metrics of rendered pages (crawler.WithRenderer).
func renderMetrics() []statMetric {
	return []statMetric{
		counter("rendered_pages_total", "Pages rendered in a browser (WithRenderer).",
			func(s *crawler.Stats) int64 { return s.Rendered }),
		counter("render_failures_total", "Renders that failed; the page went on as fetched.",
			func(s *crawler.Stats) int64 { return s.RenderFailed }),
		gauge("render_seconds", "Wall time spent rendering pages.",
			func(s *crawler.Stats) float64 { return s.RenderTime.Seconds() }),
		counter("subrequests_total", "Requests rendered pages made that the crawler fetched.",
			func(s *crawler.Stats) int64 { return s.Subrequests }),
		counter("subrequests_cached_total", "Requests rendered pages made that the resource cache answered.",
			func(s *crawler.Stats) int64 { return s.SubrequestsCached }),
		counter("subrequests_refused_total", "Requests rendered pages made that were refused: robots.txt, the address guard, a render's budget, media.",
			func(s *crawler.Stats) int64 { return s.SubrequestsRefused }),
		counter("render_skipped_total", "HTML pages -render auto left unrendered, predicted static.",
			func(s *crawler.Stats) int64 { return s.RenderSkipped }),
		counter("render_checked_total", "Pages -render auto predicted static and rendered to check the prediction.",
			func(s *crawler.Stats) int64 { return s.RenderChecked }),
		counter("render_missed_total", "Checks where rendering found links the static HTML lacked: pages -render auto would have missed.",
			func(s *crawler.Stats) int64 { return s.RenderMissed }),
	}
}

// labelled yields the counts of a Stats map by label: its keys, which are
// strings (crawler.ErrorKind, crawler.SkipReason…).
func labelled[K ~string](m map[K]int64) iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) {
		for k, v := range m {
			if !yield(string(k), v) {
				return
			}
		}
	}
}

// statusClasses sums status codes into classes. The four classes a crawl
// meets are always present, zero or not, so that their rates exist from
// the first scrape; codes outside 100–599 count as "other".
func statusClasses(codes map[int]int64) map[string]int64 {
	out := map[string]int64{"2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0}
	for code, n := range codes {
		out[statusClass(code)] += n
	}
	return out
}

func statusClass(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code/100) + "xx"
}
