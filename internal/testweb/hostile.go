package testweb

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Scenario names one kind of hostility. Every hostile host plays one
// scenario (a few scenarios need two hosts).
type Scenario string

// The scenarios of a hostile web. Each constant's comment says what its
// host does and what a polite, safe crawler must do there; HostileHost
// carries the same ground truth in a form tests can check.
const (
	// ScenarioDrip: drip.test answers /drip/headers one byte per
	// DripInterval, status line and headers included, and /drip/body
	// with prompt headers and then an endless body one byte per interval.
	// The crawler must give up within its header and total timeouts and
	// still fetch the host's /ok.
	ScenarioDrip Scenario = "drip"
	// ScenarioHang: hang.test reads the request for /hang and never
	// answers. The crawler must give up within its header timeout and
	// still fetch /ok.
	ScenarioHang Scenario = "hang"
	// ScenarioSilent: silent.test accepts TCP connections and never reads
	// or writes a byte, robots.txt included. Nothing reaches the log; the
	// crawl must end anyway (Hostile.SilentAccepts counts connections).
	ScenarioSilent Scenario = "silent"
	// ScenarioBomb: bomb.test serves /bomb/gzip, /bomb/deflate and
	// /bomb/br as HTML whose Content-Encoding decodes to BombSize bytes,
	// and names two sitemaps that are bombs too (one gzip-encoded in
	// transit, one a .xml.gz file). Memory must stay bounded, each bomb
	// is requested once, and /ok is fetched.
	ScenarioBomb Scenario = "bomb"
	// ScenarioRobotsBomb: robotsbomb.test serves a gzip-encoded robots.txt
	// whose first lines disallow /secret/ and which then decodes to
	// BombSize bytes of blanks. The Disallow must be obeyed and memory
	// stay bounded.
	ScenarioRobotsBomb Scenario = "robots-bomb"
	// ScenarioSitemapChain: sitemaps.test names in robots.txt an endless
	// chain of sitemap indexes (each names the next, and a urlset) and an
	// index that names itself. Sitemap reading must stop: the self-naming
	// index is requested once and the chain not past link MaxSitemapChain.
	ScenarioSitemapChain Scenario = "sitemap-chain"
	// ScenarioLinkFlood: flood.test's home page is several MiB holding
	// FloodLinks links (/ok first). Memory must stay bounded and no more
	// than the crawler's link cap (10,000 by default) be followed.
	ScenarioLinkFlood Scenario = "link-flood"
	// ScenarioDeepNesting: nest.test's /nofollow-deep page says
	// <meta name="robots" content="noindex,nofollow"> in its head and
	// holds links to /deep/… inside more than 512 nested elements; none
	// may be fetched. /deep-ok nests as deep without the meta tag: its
	// links (/found/…) may be followed or the page reported as an error.
	ScenarioDeepNesting Scenario = "deep-nesting"
	// ScenarioRedirects: redirect.test lies with redirects: a loop
	// /loop/a → /loop/b → /loop/a, /self → /self, a 301 without Location,
	// redirects into /private/ (disallowed by its robots.txt), and a chain
	// /chain/0 → /chain/1 → … longer than any sane max-redirects. Nothing
	// under /private/ and no /chain/N past the crawler's max-redirects may
	// be requested, and nothing twice.
	ScenarioRedirects Scenario = "redirects"
	// ScenarioRobotsRedirectSlow: slowrobots.test's robots.txt redirects
	// to pace.test, a host asking for a Crawl-delay of PaceCrawlDelay; the
	// hop is a request to pace.test and must be paced like one. The rules
	// it leads to disallow /secret/ on slowrobots.test.
	ScenarioRobotsRedirectSlow Scenario = "robots-redirect-slow"
	// ScenarioRobotsGzip: gzrobots.test serves robots.txt with
	// Content-Encoding: gzip whatever was asked; its Disallow: /secret/
	// must be obeyed.
	ScenarioRobotsGzip Scenario = "robots-gzip"
	// ScenarioRobotsUTF16: utf16robots.test serves robots.txt in UTF-16LE
	// with a byte order mark; its Disallow: /secret/ must be obeyed.
	ScenarioRobotsUTF16 Scenario = "robots-utf16"
	// ScenarioRobotsGroups: groups.test's robots.txt is
	// "User-agent: *", "Crawl-delay: 1", a blank line, "User-agent:
	// BadBot", "Disallow: /": one group (blank lines and unknown lines do
	// not end a group), so every crawler is disallowed everything. Only
	// robots.txt may be requested.
	ScenarioRobotsGroups Scenario = "robots-groups"
	// ScenarioPrivateRedirect: private.test redirects to and links to
	// private and unspecified IP literals (169.254.169.254, 10.0.0.1,
	// 192.168.1.1, 0.0.0.0:port …). None may be dialled: a crawler whose
	// seeds are host names refuses such URLs before any connection
	// (Hostile.ForeignDials lists every refused dial).
	ScenarioPrivateRedirect Scenario = "private-redirect"
	// ScenarioStaleRobots: stale.test answers its first robots.txt request
	// with rules (Disallow: /secret/) cacheable for a minute and every
	// later one with 429 and Retry-After: 3600. With a stale copy in hand
	// the crawler must keep obeying it, fetch the host's pages, and send
	// nothing to the host until Retry-After has passed. Real time would
	// take over an hour: crawl it on a fake clock (a testing/synctest
	// bubble) and judge the requests as logged on that clock.
	ScenarioStaleRobots Scenario = "stale-robots"
	// ScenarioPaths: paths.test links to /a/ whose every page links the
	// relative "a/" (so /a/a/a/… forever), to /x/y/ likewise repeating
	// "x/y/", and to a path of DeepPathSegments distinct segments. A
	// crawler must not walk the repetition: no path may repeat a segment
	// (or pair) RepeatLimit times in a row, and the host's requests stay
	// within its budget.
	ScenarioPaths Scenario = "pathological-paths"
)

// Scenarios lists every scenario in the order of Hostile.Hosts.
func Scenarios() []Scenario {
	return []Scenario{
		ScenarioDrip, ScenarioHang, ScenarioSilent, ScenarioBomb, ScenarioRobotsBomb,
		ScenarioSitemapChain, ScenarioLinkFlood, ScenarioDeepNesting, ScenarioRedirects,
		ScenarioRobotsRedirectSlow, ScenarioRobotsGzip, ScenarioRobotsUTF16,
		ScenarioRobotsGroups, ScenarioPrivateRedirect, ScenarioStaleRobots, ScenarioPaths,
	}
}

// Fixed figures of the hostile web's ground truth.
const (
	// MaxSitemapChain is the last link of the endless sitemap chain a
	// crawler may request: heed stops at depth 4, and any sane budget
	// well before 32.
	MaxSitemapChain = 32
	// RepeatLimit is how many times in a row a path segment (or pair of
	// segments) may repeat in a requested path of paths.test.
	RepeatLimit = 4
	// DefaultLinkCap is the number of links per page a crawler follows at
	// most by default; flood.test's budget is built on it.
	DefaultLinkCap = 10_000
)

// HostileConfig describes a hostile web. The zero value serves every hostile
// host with the default figures and no normal web.
type HostileConfig struct {
	// Normal is the synthetic web served beside the hostile hosts, by the
	// names VirtualAuthorities gives; Hosts 0 means none.
	Normal Config
	// DripInterval is the pause between two bytes of drip.test; zero
	// means 100ms.
	DripInterval time.Duration
	// BombSize is how many bytes each compression bomb decodes to; zero
	// means 2 GiB.
	BombSize int64
	// FloodLinks is the number of links on flood.test's home page; zero
	// means 300,000.
	FloodLinks int
	// Nesting is how deep nest.test nests its elements; zero means 2,000.
	Nesting int
	// RedirectChain is the length of redirect.test's chain; zero means 30.
	RedirectChain int
	// PaceCrawlDelay is pace.test's Crawl-delay; zero means one second.
	// It is written in whole seconds when it is one, in fractions
	// otherwise.
	PaceCrawlDelay time.Duration
	// DeepPathSegments is the number of segments of paths.test's deep
	// path; zero means 600.
	DeepPathSegments int
}

func (c HostileConfig) withDefaults() HostileConfig {
	if c.DripInterval <= 0 {
		c.DripInterval = 100 * time.Millisecond
	}
	if c.BombSize <= 0 {
		c.BombSize = 2 << 30
	}
	if c.FloodLinks <= 0 {
		c.FloodLinks = 300_000
	}
	if c.Nesting <= 0 {
		c.Nesting = 2000
	}
	if c.RedirectChain <= 0 {
		c.RedirectChain = 30
	}
	if c.PaceCrawlDelay <= 0 {
		c.PaceCrawlDelay = time.Second
	}
	if c.DeepPathSegments <= 0 {
		c.DeepPathSegments = 600
	}
	return c
}

// HostileHost is one hostile host and its ground truth: what a polite, safe
// crawler seeded with Seeds must request there and must not.
type HostileHost struct {
	Authority string   // e.g. "drip.test" (port 80 implied)
	Scenario  Scenario // what it plays
	// Seeds are the URLs to seed a crawl with to meet the scenario; a
	// scenario played by two hosts lists every seed on its first host.
	Seeds []string
	// Required are the request targets (path and query) a complete
	// crawler requests on this host despite its hostility. Requested is
	// enough: a crawler rightly hangs up on a robots.txt bomb.
	Required []string
	// CrawlDelay is the Crawl-delay of its robots.txt for every agent, 0
	// if none.
	CrawlDelay time.Duration
	// Budget bounds the requests a safe crawler sends the host in one
	// crawl (retries included); 0 means no bound.
	Budget int
	// Retries tells whether requests to the host may fail in ways worth
	// retrying (timeouts): then a target may be requested more than once.
	Retries bool
	// Unreachable lists URLs the host points to that must never be
	// requested or dialled.
	Unreachable []string
}

// hostileHost is a HostileHost with its behaviour.
type hostileHost struct {
	HostileHost
	// serve answers a request for target, a canonical path and query, and
	// returns the status written (0 if the client went away first).
	serve func(rw http.ResponseWriter, r *http.Request, target string) int
	// forbidden says why target must not be requested, or "".
	forbidden func(target string, opts HostileAnalyzeOptions) string
	// retryAfter is the Retry-After its 429 answers carry, if any.
	retryAfter time.Duration
}

// Hostile is a web of hostile hosts, optionally beside a normal synthetic
// web, all served by name from one loopback httptest.Server (silent.test
// from a raw listener of its own). Reach it only through DialContext,
// Transport or Client: they refuse, and record, every address that is not a
// host of this web, so a test can prove nothing tried to leave loopback.
type Hostile struct {
	// Normal is the normal web served beside, nil if HostileConfig.Normal
	// has no hosts.
	Normal *Web
	// Log records every request any host answered.
	Log *Log
	// Server serves every host but silent.test.
	Server *httptest.Server

	cfg         HostileConfig
	normal      *handler
	hosts       []*hostileHost
	byAuthority map[string]*hostileHost

	silent   net.Listener
	accepts  atomic.Int64
	done     chan struct{}
	closing  sync.Once
	handlers sync.WaitGroup // hijacked responses and the silent listener

	mu      sync.Mutex
	foreign []string
	conns   []net.Conn // silent.test's held connections

	bombs    bombCache
	floodMu  sync.Mutex
	flood    []byte
	nestOnce sync.Once
	nestNF   []byte
	nestOK   []byte

	staleRobots atomic.Int64 // robots.txt requests stale.test answered

	// serving, if set, is told of every request to a hostile host as it
	// starts, so a test can tell a hanging response from one not yet read.
	serving atomic.Pointer[func(authority, target string)]
}

// NewHostile builds the hostile web described by cfg and starts serving it.
// Call Close when done.
func NewHostile(cfg HostileConfig) (*Hostile, error) {
	cfg = cfg.withDefaults()
	hw := &Hostile{Log: &Log{}, cfg: cfg, done: make(chan struct{}), byAuthority: map[string]*hostileHost{}}
	if cfg.Normal.Hosts > 0 {
		w, err := New(cfg.Normal, VirtualAuthorities(cfg.Normal.Hosts))
		if err != nil {
			return nil, err
		}
		hw.Normal = w
		hw.normal = w.handler(hw.Log, hw.done)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testweb: listening for silent.test: %w", err)
	}
	hw.silent = ln
	hw.Server = httptest.NewUnstartedServer(http.HandlerFunc(hw.serveHTTP))
	// The port is part of the 0.0.0.0 redirect target, so the hosts are
	// made once the server has its address.
	hw.Server.Start()
	for _, h := range hw.makeHosts() {
		if hw.Normal != nil && hw.Normal.byAuthority[h.Authority] != nil {
			hw.Close()
			return nil, fmt.Errorf("%w: hostile host %s clashes with the normal web", ErrConfig, h.Authority)
		}
		hw.hosts = append(hw.hosts, h)
		hw.byAuthority[h.Authority] = h
	}
	hw.handlers.Go(hw.acceptSilent)
	return hw, nil
}

// Hosts returns the hostile hosts in the order of Scenarios.
func (hw *Hostile) Hosts() []HostileHost {
	out := make([]HostileHost, len(hw.hosts))
	for i, h := range hw.hosts {
		out[i] = h.public()
	}
	return out
}

// Scenario returns the hosts that play s, the one holding the seeds first.
func (hw *Hostile) Scenario(s Scenario) []HostileHost {
	var out []HostileHost
	for _, h := range hw.hosts {
		if h.Scenario == s {
			out = append(out, h.public())
		}
	}
	return out
}

// Seeds returns the seeds of the given scenarios, preceded by every home
// page of the normal web.
func (hw *Hostile) Seeds(scenarios ...Scenario) []string {
	var out []string
	if hw.Normal != nil {
		out = append(out, hw.Normal.Seeds()...)
	}
	for _, h := range hw.hosts {
		if slices.Contains(scenarios, h.Scenario) {
			out = append(out, h.Seeds...)
		}
	}
	return out
}

func (h *hostileHost) public() HostileHost {
	p := h.HostileHost
	p.Seeds = slices.Clone(p.Seeds)
	p.Required = slices.Clone(p.Required)
	p.Unreachable = slices.Clone(p.Unreachable)
	return p
}

// DialContext connects to the server for "host:80" of any host of the web
// (silent.test to its own listener; the normal web's HostRefused host is
// refused as Virtual refuses it). Every other address is refused with
// ErrUnknownHost, without any connection attempt, and recorded for
// ForeignDials.
func (hw *Hostile) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	host = strings.ToLower(host)
	if n := hw.Normal; err == nil && port == "80" && n != nil && n.byAuthority[host] != nil {
		return dialWeb(ctx, n, network, addr, hw.Server.Listener.Addr().String())
	}
	known := err == nil && port == "80" && hw.byAuthority[host] != nil
	if !known {
		hw.mu.Lock()
		hw.foreign = append(hw.foreign, network+" "+addr)
		hw.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrUnknownHost, addr)
	}
	target := hw.Server.Listener.Addr().String()
	if host == silentHost {
		target = hw.silent.Addr().String()
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target)
}

// ForeignDials returns every address DialContext was asked for that is not a
// host of the web ("tcp 10.0.0.1:80"), in order. A crawler that refuses
// private and unknown addresses as policy never causes one.
func (hw *Hostile) ForeignDials() []string {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return slices.Clone(hw.foreign)
}

// SilentAccepts returns how many connections silent.test has accepted.
func (hw *Hostile) SilentAccepts() int { return int(hw.accepts.Load()) }

// Transport returns a new transport that reaches the web's hosts through
// DialContext, never uses a proxy, and, like a crawler's own transport,
// leaves Content-Encoding to its caller: transparent gzip would hide how the
// crawler copes with encoded bodies.
func (hw *Hostile) Transport() *http.Transport {
	return &http.Transport{
		DialContext:         hw.DialContext,
		MaxIdleConns:        1000,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
}

// Client returns a client using Transport that does not follow redirects.
func (hw *Hostile) Client() *http.Client {
	return &http.Client{
		Transport:     hw.Transport(),
		Timeout:       time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Close stops every host: hanging and dripping responses end, silent.test's
// connections are closed, and Close waits for all of them.
func (hw *Hostile) Close() {
	hw.closing.Do(func() {
		close(hw.done)
		hw.silent.Close()
		hw.mu.Lock()
		for _, c := range hw.conns {
			c.Close()
		}
		hw.mu.Unlock()
		hw.Server.Close()
		hw.handlers.Wait()
		if hw.normal != nil {
			hw.normal.wait()
		}
	})
}

// acceptSilent accepts silent.test's connections and holds them, unread,
// until Close.
func (hw *Hostile) acceptSilent() {
	for {
		c, err := hw.silent.Accept()
		if err != nil {
			return
		}
		hw.accepts.Add(1)
		hw.mu.Lock()
		select {
		case <-hw.done:
			c.Close()
		default:
			hw.conns = append(hw.conns, c)
		}
		hw.mu.Unlock()
	}
}

func (hw *Hostile) serveHTTP(rw http.ResponseWriter, r *http.Request) {
	authority := strings.TrimSuffix(strings.ToLower(r.Host), ":80")
	h := hw.byAuthority[authority]
	if h == nil {
		if hw.normal != nil {
			hw.normal.ServeHTTP(rw, r)
			return
		}
		start := time.Now()
		status := notFound(rw, "unknown host")
		hw.Log.add(Entry{Start: start, End: time.Now(), Host: authority, Method: r.Method, Target: r.RequestURI, Status: status, UserAgent: r.UserAgent()})
		return
	}
	start := time.Now()
	if f := hw.serving.Load(); f != nil {
		(*f)(authority, r.RequestURI)
	}
	status := h.serve(rw, r, canonicalTarget(r.URL.EscapedPath(), r.URL.RawQuery))
	hw.Log.add(Entry{Start: start, End: time.Now(), Host: authority, Method: r.Method, Target: r.RequestURI, Status: status, UserAgent: r.UserAgent()})
}

// Host names of the hostile web.
const (
	dripHost       = "drip.test"
	hangHost       = "hang.test"
	silentHost     = "silent.test"
	bombHost       = "bomb.test"
	robotsBombHost = "robotsbomb.test"
	sitemapsHost   = "sitemaps.test"
	floodHost      = "flood.test"
	nestHost       = "nest.test"
	redirectHost   = "redirect.test"
	slowRobotsHost = "slowrobots.test"
	paceHost       = "pace.test"
	gzRobotsHost   = "gzrobots.test"
	utf16Host      = "utf16robots.test"
	groupsHost     = "groups.test"
	privateHost    = "private.test"
	staleHost      = "stale.test"
	pathsHost      = "paths.test"
)

// crawlDelayLine writes d as a robots.txt Crawl-delay value.
func crawlDelayLine(d time.Duration) string {
	if d%time.Second == 0 {
		return "Crawl-delay: " + strconv.Itoa(int(d/time.Second)) + "\n"
	}
	return "Crawl-delay: " + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "\n"
}
