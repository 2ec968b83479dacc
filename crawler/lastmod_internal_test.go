package crawler

import (
	"testing"
	"time"

	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/revisit"
)

// TestLastmodEdit: the edit a sitemap's <lastmod>s make of queued
// revisits, with the default policy: every page listed takes the claim and
// when it was read; where the host's sitemaps are trusted, a claimed
// change makes the page due at the read (within Min of its fetch) and a
// claim of none puts it off; a page not listed, a sitemap and a new URL
// are left alone.
func TestLastmodEdit(t *testing.T) {
	rv := newRevisits(&Revisit{Min: time.Minute, Max: 24 * time.Hour})
	d, err := revisit.NewDefault(revisit.Config{Bounds: revisit.Bounds{Min: rv.Min, Max: rv.Max}})
	if err != nil {
		t.Fatal(err)
	}
	rv.Policy = d
	fetched := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	read := fetched.Add(2 * time.Hour)
	due := fetched.Add(10 * time.Hour)
	var slow revisit.Page // seen unchanged over days: worth a fetch when it changes
	for range 4 {
		if err := slow.Observe(revisit.Obs{Interval: 48 * time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	queued := func(url string) *frontier.Item {
		return &frontier.Item{URL: url, Key: "h", Due: due, Visit: &frontier.Visit{Fetched: fetched, Estimator: slow}}
	}
	changed, unchanged := fetched.Add(time.Hour), fetched.Add(-time.Hour)
	claims := map[string]time.Time{"http://h/changed": changed, "http://h/same": unchanged}
	trusted := revisit.Host{Mu: 3600, Span: 7200, Sitemap: revisit.Trust{Agree: 20}}

	for _, tc := range []struct {
		name    string
		host    revisit.Host
		item    *frontier.Item
		edited  bool
		wantDue time.Time // zero: as it was
	}{
		{"trusted, claims a change", trusted, queued("http://h/changed"), true, read},
		{"untrusted, claims a change", revisit.Host{}, queued("http://h/changed"), true, time.Time{}},
		{"not listed", trusted, queued("http://h/other"), false, time.Time{}},
		{"a sitemap", trusted, func() *frontier.Item { it := queued("http://h/changed"); it.Kind = frontier.KindSitemap; return it }(), false, time.Time{}},
		{"a new URL", trusted, &frontier.Item{URL: "http://h/changed", Key: "h", Due: due}, false, time.Time{}},
	} {
		it := tc.item
		if got := rv.lastmodEdit(tc.host, claims, read)(it); got != tc.edited {
			t.Errorf("%s: edited %v, want %v", tc.name, got, tc.edited)
			continue
		}
		want := tc.wantDue
		if want.IsZero() {
			want = due
		}
		if !it.Due.Equal(want) {
			t.Errorf("%s: due %v, want %v", tc.name, it.Due, want)
		}
		if tc.edited && (!it.Lastmod.Equal(claims[it.URL]) || !it.Visit.LastmodRead.Equal(read)) {
			t.Errorf("%s: Lastmod %v read %v, want %v read %v", tc.name, it.Lastmod, it.Visit.LastmodRead, claims[it.URL], read)
		}
	}

	// A claim of no change: the copy was fresh at the read, so the page is
	// due an interval after it, not after its fetch — within Max of it.
	it := queued("http://h/same")
	if !rv.lastmodEdit(trusted, claims, read)(it) || !it.Due.After(due) || it.Due.After(fetched.Add(rv.Max)) {
		t.Errorf("trusted, claims no change: due %v, want after %v and within Max of the fetch", it.Due, due)
	}
	// A claimed change read within Min of the fetch: due at Min.
	it = queued("http://h/changed")
	soon := fetched.Add(time.Second)
	if rv.lastmodEdit(trusted, map[string]time.Time{it.URL: soon}, soon)(it); !it.Due.Equal(fetched.Add(rv.Min)) {
		t.Errorf("a change claimed a second after the fetch: due %v, want %v (Min)", it.Due, fetched.Add(rv.Min))
	}
}

// TestSitemapInterval: a host's sitemaps are read once in its uniform
// interval while their claims are weighed, four times in it once they
// proved true, daily once found lying, and never less often than daily.
func TestSitemapInterval(t *testing.T) {
	trusted := revisit.Trust{Agree: 20}
	for _, tc := range []struct {
		name string
		h    revisit.Host
		want time.Duration
	}{
		{"found lying", revisit.Host{Span: 7200, Sitemap: revisit.Trust{Agree: 5, Disagree: 5}}, SitemapInterval},
		{"no evidence yet", revisit.Host{Span: 7200}, 2 * time.Hour},
		{"some evidence", revisit.Host{Span: 7200, Sitemap: revisit.Trust{Agree: 5}}, 2 * time.Hour},
		{"no evidence, a span of days", revisit.Host{Span: 3 * 86400}, SitemapInterval},
		{"no evidence, no span yet", revisit.Host{}, SitemapInterval},
		{"trusted", revisit.Host{Span: 7200, Sitemap: trusted}, 30 * time.Minute},
		{"trusted, no span yet", revisit.Host{Sitemap: trusted}, SitemapInterval},
		{"trusted, a span of weeks", revisit.Host{Span: 14 * 86400, Sitemap: trusted}, SitemapInterval},
	} {
		if got := sitemapInterval(tc.h); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
