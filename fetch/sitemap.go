package fetch

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html/charset"

	"github.com/heedcrawl/heed/internal/hostid"
)

// Limits of the sitemap protocol (sitemaps.org), applied by ParseSitemap
// when SitemapOptions leaves them zero.
const (
	MaxSitemapURLs  = 50_000
	MaxSitemapBytes = 50 << 20
	// maxLocLen is the protocol's bound on a <loc>.
	maxLocLen = 2048
	// maxSitemapDepth bounds element nesting; real sitemaps need four
	// levels, feeds a few more.
	maxSitemapDepth = 64
	// maxSitemapToken bounds a single XML token (one text node, one tag),
	// so that no element can make the parser hold the whole document.
	maxSitemapToken = 4 << 20
)

// Sitemap formats reported in SitemapStats.Format.
const (
	FormatURLSet       = "urlset"
	FormatSitemapIndex = "sitemapindex"
	FormatText         = "text"
	FormatRSS          = "rss"
	FormatAtom         = "atom"
)

// Errors returned by ParseSitemap. Entries parsed before any of them are
// still delivered.
var (
	// ErrNotSitemap: the document is not a sitemap or feed, for instance
	// an HTML error page, an unknown XML root or a text file whose first
	// line is not a URL.
	ErrNotSitemap = errors.New("fetch: not a sitemap")
	// ErrSitemapTooLarge: the document has more entries than MaxURLs or is
	// bigger than MaxBytes uncompressed; parsing stopped there.
	ErrSitemapTooLarge = errors.New("fetch: sitemap exceeds protocol limits")
	// ErrMalformedSitemap: the XML or the gzip stream is broken.
	ErrMalformedSitemap = errors.New("fetch: malformed sitemap")
)

// SitemapEntry is one URL listed by a sitemap or feed.
type SitemapEntry struct {
	// Loc is the absolute http(s) URL.
	Loc string
	// Lastmod is when the page (or nested sitemap) last changed, or the
	// zero Time if not given or not understood.
	Lastmod time.Time
	// Changefreq is one of always, hourly, daily, weekly, monthly, yearly,
	// never, or empty.
	Changefreq string
	// Priority is between 0 and 1; 0.5 (the protocol's default) if absent
	// or invalid.
	Priority float64
	// Sitemap reports that Loc is a nested sitemap listed by a sitemap
	// index, not a page.
	Sitemap bool
}

// SitemapOptions adjusts ParseSitemap.
type SitemapOptions struct {
	// RobotsURL is the URL of the robots.txt whose Sitemap: line named
	// this sitemap, or empty. The protocol lets a sitemap list only URLs
	// under its own directory on its own host; being named in a host's
	// robots.txt (cross-submission) permits any URL on that host.
	RobotsURL string
	// MaxURLs bounds the entries read; zero means MaxSitemapURLs.
	MaxURLs int
	// MaxBytes bounds the uncompressed size; zero means MaxSitemapBytes.
	MaxBytes int64
	// ModifiedSince, if not zero, drops entries whose Lastmod is before it
	// (entries without Lastmod are kept). For a sitemap index this skips
	// nested sitemaps that have not changed since.
	ModifiedSince time.Time
}

// SitemapStats counts what ParseSitemap read and what it dropped.
type SitemapStats struct {
	Format     string // one of the Format constants, or "" if not recognised
	URLs       int    // page entries delivered
	Sitemaps   int    // nested sitemap entries delivered
	Invalid    int    // locs that are not absolute http(s) URLs or are too long
	OutOfScope int    // URLs outside what this sitemap may list
	Old        int    // entries dropped by ModifiedSince
	BadLastmod int    // lastmod values not understood (entry kept)
	Truncated  bool   // a protocol limit stopped parsing
	Bytes      int64  // uncompressed bytes read
}

// ParseSitemap reads a sitemap from r and calls yield for each entry, in
// document order, until yield returns false or the document ends. It never
// holds more of the document than one entry and a small buffer, so a 50 MB
// sitemap costs no more memory than a small one.
//
// It understands XML urlset and sitemapindex documents, plain-text sitemaps
// (one URL per line), RSS 2.0 (and 1.0) and Atom feeds, each optionally
// gzip-compressed (recognised by its magic bytes, whatever the file is
// called). base is the sitemap's own URL: it decides which URLs are in
// scope and resolves relative links in feeds. With a nil base no scope rule
// is applied.
//
// Entries outside the sitemap's scope, invalid URLs and entries older than
// opts.ModifiedSince are dropped and counted in the stats. A broken document
// returns ErrMalformedSitemap, a document that is not a sitemap ErrNotSitemap,
// one over the protocol limits ErrSitemapTooLarge; in every case the entries
// before the problem have been delivered and the stats count them.
func ParseSitemap(r io.Reader, base *url.URL, opts SitemapOptions, yield func(SitemapEntry) bool) (SitemapStats, error) {
	p := &sitemapParser{
		base:     base,
		opts:     opts,
		yield:    yield,
		maxURLs:  opts.MaxURLs,
		maxBytes: opts.MaxBytes,
	}
	if p.maxURLs <= 0 {
		p.maxURLs = MaxSitemapURLs
	}
	if p.maxBytes <= 0 {
		p.maxBytes = MaxSitemapBytes
	}
	p.scope = newSitemapScope(base, opts.RobotsURL)
	err := p.parse(r)
	if p.in != nil {
		p.stats.Bytes = p.in.n
	}
	if errors.Is(err, ErrSitemapTooLarge) {
		p.stats.Truncated = true
	}
	return p.stats, err
}

type sitemapParser struct {
	base     *url.URL
	opts     SitemapOptions
	yield    func(SitemapEntry) bool
	maxURLs  int
	maxBytes int64
	scope    sitemapScope
	stats    SitemapStats
	in       *cappedReader
	entries  int  // entries seen, valid or not, for the MaxURLs limit
	stopped  bool // yield returned false
}

// errStopped ends parsing when the caller's yield declines more entries.
var errStopped = errors.New("stopped")

func (p *sitemapParser) parse(r io.Reader) error {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%w: gzip: %w", ErrMalformedSitemap, err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	p.in = &cappedReader{r: r, max: p.maxBytes}
	in := bufio.NewReader(p.in)
	head, err := in.Peek(512)
	if len(head) == 0 {
		if err != nil && err != io.EOF {
			return p.readError(err)
		}
		return fmt.Errorf("%w: empty document", ErrNotSitemap)
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) > 0 && head[0] == '<' {
		err = p.parseXML(in)
	} else {
		err = p.parseText(in)
	}
	if errors.Is(err, errStopped) {
		return nil
	}
	return err
}

// readError classifies an error from the input.
func (p *sitemapParser) readError(err error) error {
	switch {
	case errors.Is(err, ErrSitemapTooLarge):
		return err
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %w", ErrMalformedSitemap, err)
	}
	var ce flate.CorruptInputError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: %w", ErrMalformedSitemap, err)
	}
	return fmt.Errorf("fetch: reading sitemap: %w", err)
}

// rawEntry is an entry as written, before validation.
type rawEntry struct {
	loc, lastmod, changefreq, priority string
	sitemap                            bool
	relative                           bool // feeds may use relative links
}

// emit validates an entry, applies scope and filters, and delivers it.
func (p *sitemapParser) emit(e rawEntry) error {
	p.entries++
	if p.entries > p.maxURLs {
		return fmt.Errorf("%w: more than %d entries", ErrSitemapTooLarge, p.maxURLs)
	}
	loc := strings.TrimSpace(e.loc)
	if loc == "" || len(loc) > maxLocLen {
		p.stats.Invalid++
		return nil
	}
	var u *url.URL
	var err error
	if e.relative && p.base != nil {
		u, err = p.base.Parse(loc)
	} else {
		u, err = url.Parse(loc)
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.stats.Invalid++
		return nil
	}
	u.Fragment, u.RawFragment = "", ""
	if !p.scope.allows(u, e.sitemap) {
		p.stats.OutOfScope++
		return nil
	}
	out := SitemapEntry{Loc: u.String(), Priority: 0.5, Sitemap: e.sitemap}
	if s := strings.TrimSpace(e.lastmod); s != "" {
		if t, ok := parseLastmod(s); ok {
			out.Lastmod = t
		} else {
			p.stats.BadLastmod++
		}
	}
	if !p.opts.ModifiedSince.IsZero() && !out.Lastmod.IsZero() && out.Lastmod.Before(p.opts.ModifiedSince) {
		p.stats.Old++
		return nil
	}
	switch cf := strings.ToLower(strings.TrimSpace(e.changefreq)); cf {
	case "always", "hourly", "daily", "weekly", "monthly", "yearly", "never":
		out.Changefreq = cf
	}
	if s := strings.TrimSpace(e.priority); s != "" {
		if pr, err := strconv.ParseFloat(s, 64); err == nil && pr >= 0 && pr <= 1 {
			out.Priority = pr
		}
	}
	if e.sitemap {
		p.stats.Sitemaps++
	} else {
		p.stats.URLs++
	}
	if !p.yield(out) {
		p.stopped = true
		return errStopped
	}
	return nil
}

// parseText reads a plain-text sitemap: one URL per line. A first line that
// is not a URL means the document is something else (an error page, say).
func (p *sitemapParser) parseText(in *bufio.Reader) error {
	p.stats.Format = FormatText
	sawURL := false
	for {
		line, err := in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Far longer than any URL may be: skip the rest of the line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = in.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return p.readError(err)
			}
			if !sawURL {
				p.stats.Format = ""
				return fmt.Errorf("%w: first line is not a URL", ErrNotSitemap)
			}
			p.entries++
			p.stats.Invalid++
			if err == io.EOF {
				return nil
			}
			continue
		}
		s := strings.TrimSpace(string(bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))))
		if s != "" {
			if !sawURL {
				if u, perr := url.Parse(s); perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					p.stats.Format = ""
					return fmt.Errorf("%w: first line is not a URL", ErrNotSitemap)
				}
				sawURL = true
			}
			if eerr := p.emit(rawEntry{loc: s}); eerr != nil {
				return eerr
			}
		}
		if err == io.EOF {
			if !sawURL {
				p.stats.Format = ""
				return fmt.Errorf("%w: no URLs", ErrNotSitemap)
			}
			return nil
		}
		if err != nil {
			return p.readError(err)
		}
	}
}

// xml element roles while parsing.
type xmlState struct {
	format    string
	entryName string // element that delimits an entry: url, sitemap, item, entry
	inEntry   bool
	entryAt   int // stack depth of the entry element
	field     string
	fieldAt   int
	text      strings.Builder
	cur       rawEntry
	atomAlt   bool // cur.loc came from an Atom rel=alternate link
}

func (p *sitemapParser) parseXML(in *bufio.Reader) error {
	guard := &tokenGuard{r: in, max: maxSitemapToken}
	d := xml.NewDecoder(guard)
	d.Strict = false // real sitemaps have unescaped '&' in URLs
	d.CharsetReader = charset.NewReaderLabel
	var st xmlState
	depth := 0
	for {
		guard.n = 0
		tok, err := d.Token()
		if err == io.EOF {
			if st.format == "" {
				return fmt.Errorf("%w: no root element", ErrNotSitemap)
			}
			return nil
		}
		if err != nil {
			if errors.Is(err, ErrSitemapTooLarge) {
				return err
			}
			var se *xml.SyntaxError
			if st.format == "" && errors.As(err, &se) {
				return fmt.Errorf("%w: %w", ErrNotSitemap, err)
			}
			if errors.As(err, &se) || errors.Is(err, errTokenTooLarge) {
				return fmt.Errorf("%w: %w", ErrMalformedSitemap, err)
			}
			return p.readError(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > maxSitemapDepth {
				return fmt.Errorf("%w: elements nested deeper than %d", ErrMalformedSitemap, maxSitemapDepth)
			}
			name := strings.ToLower(t.Name.Local)
			if depth == 1 {
				if err := st.root(name); err != nil {
					return err
				}
				p.stats.Format = st.format
				continue
			}
			st.start(name, t.Attr, depth)
		case xml.CharData:
			if st.field != "" {
				if st.text.Len()+len(t) <= maxLocLen*2 {
					st.text.Write(t)
				}
			}
		case xml.EndElement:
			if st.field != "" && depth == st.fieldAt {
				st.endField()
			}
			if st.inEntry && depth == st.entryAt {
				st.inEntry = false
				if err := p.emit(st.cur); err != nil {
					return err
				}
			}
			depth--
		}
	}
}

// root recognises the document type from its root element.
func (st *xmlState) root(name string) error {
	switch name {
	case "urlset":
		st.format, st.entryName = FormatURLSet, "url"
	case "sitemapindex":
		st.format, st.entryName = FormatSitemapIndex, "sitemap"
	case "rss", "rdf":
		st.format, st.entryName = FormatRSS, "item"
	case "feed":
		st.format, st.entryName = FormatAtom, "entry"
	case "html":
		return fmt.Errorf("%w: HTML document", ErrNotSitemap)
	default:
		return fmt.Errorf("%w: root element <%s>", ErrNotSitemap, name)
	}
	return nil
}

func (st *xmlState) start(name string, attrs []xml.Attr, depth int) {
	if !st.inEntry {
		// Sitemap entries are children of the root; feed items may sit in
		// a <channel>.
		if name == st.entryName && (depth == 2 || st.format == FormatRSS || st.format == FormatAtom) {
			st.inEntry, st.entryAt = true, depth
			st.cur = rawEntry{sitemap: st.format == FormatSitemapIndex, relative: st.format == FormatRSS || st.format == FormatAtom}
			st.atomAlt = false
		}
		return
	}
	if depth != st.entryAt+1 || st.field != "" {
		return // extension elements such as image:loc are not ours
	}
	switch st.format {
	case FormatURLSet, FormatSitemapIndex:
		switch name {
		case "loc", "lastmod", "changefreq", "priority":
			st.field, st.fieldAt = name, depth
		}
	case FormatRSS:
		switch name {
		case "link", "pubdate", "date":
			st.field, st.fieldAt = name, depth
		case "guid":
			// A guid is the item's URL unless it says otherwise.
			if !strings.EqualFold(attrValue(attrs, "ispermalink"), "false") {
				st.field, st.fieldAt = name, depth
			}
		}
	case FormatAtom:
		switch name {
		case "link":
			rel := strings.ToLower(strings.TrimSpace(attrValue(attrs, "rel")))
			href := attrValue(attrs, "href")
			if href != "" && (rel == "" || rel == "alternate") && !st.atomAlt {
				st.cur.loc, st.atomAlt = href, true
			}
		case "updated", "published":
			st.field, st.fieldAt = name, depth
		}
	}
}

func (st *xmlState) endField() {
	v := st.text.String()
	st.text.Reset()
	switch st.field {
	case "loc", "link":
		st.cur.loc = v
	case "guid":
		if st.cur.loc == "" {
			st.cur.loc = v
		}
	case "lastmod", "pubdate", "date":
		st.cur.lastmod = v
	case "updated":
		st.cur.lastmod = v
	case "published":
		if st.cur.lastmod == "" {
			st.cur.lastmod = v
		}
	case "changefreq":
		st.cur.changefreq = v
	case "priority":
		st.cur.priority = v
	}
	st.field = ""
}

func attrValue(attrs []xml.Attr, local string) string {
	for _, a := range attrs {
		if strings.EqualFold(a.Name.Local, local) {
			return a.Value
		}
	}
	return ""
}

// lastmodLayouts are the W3C Datetime profile the protocol prescribes, the
// variants found in the wild, and the RFC 822 family RSS uses.
var lastmodLayouts = [...]string{
	time.RFC3339, // also accepts fractional seconds
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05 Z07:00",
	"2006-01-02 15:04:05",
	"2006-01-02",
	"2006-01",
	"2006",
	time.RFC1123Z,
	time.RFC1123,
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"2 Jan 2006 15:04:05 -0700",
	"2 Jan 2006 15:04:05 MST",
	time.RFC822Z,
	time.RFC822,
	time.RFC850,
}

// parseLastmod reads a date in any of lastmodLayouts; times without a zone
// are taken as UTC.
func parseLastmod(s string) (time.Time, bool) {
	for _, layout := range lastmodLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// sitemapScope decides which URLs a sitemap may list.
type sitemapScope struct {
	any        bool   // no base: everything allowed
	host       string // the sitemap's host[:port]
	dir        string // the sitemap's directory, with trailing slash
	robotsHost string // host of the robots.txt that named it, or ""
}

func newSitemapScope(base *url.URL, robotsURL string) sitemapScope {
	if base == nil {
		return sitemapScope{any: true}
	}
	s := sitemapScope{host: hostid.Key(base)}
	path := base.EscapedPath()
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		s.dir = path[:i+1]
	} else {
		s.dir = "/"
	}
	if robotsURL != "" {
		if ru, err := url.Parse(robotsURL); err == nil && ru.Host != "" {
			s.robotsHost = hostid.Key(ru)
		}
	}
	return s
}

// allows applies the protocol's rule: pages under the sitemap's directory on
// its host, or anywhere on the host whose robots.txt named it. Nested
// sitemaps need only be on the same site. The scheme is not compared: an
// http sitemap listing https pages of the same host is a migration, not a
// trespass.
func (s sitemapScope) allows(u *url.URL, nested bool) bool {
	if s.any {
		return true
	}
	h := hostid.Key(u) // the crawl's one identity of a host
	if h == "" {
		return false // no valid host: no page of this site
	}
	if s.robotsHost != "" && h == s.robotsHost {
		return true
	}
	if h != s.host {
		return false
	}
	if nested {
		return true
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return strings.HasPrefix(path, s.dir)
}

// cappedReader counts bytes and fails with ErrSitemapTooLarge once more than
// max would be read.
type cappedReader struct {
	r   io.Reader
	max int64
	n   int64
}

func (c *cappedReader) Read(b []byte) (int, error) {
	if c.n >= c.max {
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
			return 0, fmt.Errorf("%w: more than %d bytes", ErrSitemapTooLarge, c.max)
		}
		return 0, io.EOF
	}
	if rest := c.max - c.n; int64(len(b)) > rest {
		b = b[:rest]
	}
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

var errTokenTooLarge = errors.New("XML token too large")

// tokenGuard fails a read once more than max bytes have been read since the
// parser last reset n, i.e. within one token, so that one giant text node
// cannot make the XML decoder buffer the whole document.
type tokenGuard struct {
	r   io.Reader
	max int
	n   int
}

func (g *tokenGuard) Read(b []byte) (int, error) {
	if g.n > g.max {
		return 0, errTokenTooLarge
	}
	n, err := g.r.Read(b)
	g.n += n
	return n, err
}
