package fetch_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/heedcrawl/heed/fetch"
)

// TestRedirectLoopSpellings: a redirect to the page itself, or to one
// earlier in the chain, is a loop however its host is spelled, because
// the host is the one the frontier and the limiter see.
func TestRedirectLoopSpellings(t *testing.T) {
	parse := func(s string) *url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	spellings := []string{
		"http://a/x", "http://a:80/x", "http://a./x", "http://A/x", "HTTP://A.:080/x",
	}
	for _, from := range spellings {
		for _, to := range spellings {
			p := &fetch.Page{URL: parse(from), Redirect: parse(to)}
			if _, err := p.RedirectRequest(0); !errors.Is(err, fetch.ErrRedirectLoop) {
				t.Errorf("%s → %s: err = %v, want ErrRedirectLoop", from, to, err)
			}
			p = &fetch.Page{URL: parse("http://b/"), Redirect: parse(to), RedirectChain: []string{from}}
			if _, err := p.RedirectRequest(0); !errors.Is(err, fetch.ErrRedirectLoop) {
				t.Errorf("%s → b → %s: err = %v, want ErrRedirectLoop", from, to, err)
			}
		}
	}
	idn := []string{"http://bücher.example/", "http://xn--bcher-kva.example/", "http://BÜCHER.example.:80"}
	for _, from := range idn {
		for _, to := range idn {
			p := &fetch.Page{URL: parse(from), Redirect: parse(to)}
			if _, err := p.RedirectRequest(0); !errors.Is(err, fetch.ErrRedirectLoop) {
				t.Errorf("%s → %s: err = %v, want ErrRedirectLoop", from, to, err)
			}
		}
	}
	// Different resources are not loops.
	for _, to := range []string{"https://a/x", "http://a:8080/x", "http://a/y", "http://a/x?q", "http://ab/x"} {
		p := &fetch.Page{URL: parse("http://a/x"), Redirect: parse(to)}
		if _, err := p.RedirectRequest(0); err != nil {
			t.Errorf("http://a/x → %s: err = %v, want none", to, err)
		}
	}
}
