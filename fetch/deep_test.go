package fetch_test

import (
	"context"
	"strings"
	"testing"

	"github.com/heedcrawl/heed/fetch"
)

// deepPage nests its links and title inside depth <div>s: deeper than the
// 512 open elements golang.org/x/net/html's tree parser accepts.
func deepPage(head string, depth int) string {
	return `<!DOCTYPE html><html><head>` + head + `</head><body>` +
		strings.Repeat(`<div class="wrap">`, depth) +
		`<title>Deep  down</title><base href="/base/">` +
		`<a href="one">First <b>link</b></a><a href="/two" rel="next">Second</a>` +
		`<area href="three" alt="Third"><iframe src="/frame"></iframe><link rel="canonical" href="/canon">` +
		strings.Repeat(`</div>`, depth) + `</body></html>`
}

func TestDeeplyNestedPageKeepsDirectivesTitleAndLinks(t *testing.T) {
	want := []fetch.Link{
		{URL: "http://example.com/base/one", Tag: "a", Text: "First link"},
		{URL: "http://example.com/two", Tag: "a", Rel: "next", Text: "Second"},
		{URL: "http://example.com/base/three", Tag: "area", Text: "Third"},
		{URL: "http://example.com/frame", Tag: "iframe"},
		{URL: "http://example.com/canon", Tag: "link", Rel: "canonical"},
	}
	p := htmlPage(t, "http://example.com/dir/", deepPage(`<meta name="robots" content="noindex,nofollow">`, 600))
	if d := p.Directives(); !d.Noindex || !d.Nofollow {
		t.Errorf("Directives() = %+v, want noindex and nofollow", d)
	}
	if got := p.Title(); got != "Deep down" {
		t.Errorf("Title() = %q", got)
	}
	links, err := fetch.NewRegistry().Extract(context.Background(), p)
	if err != nil || len(links) != 0 {
		t.Errorf("Extract on a nofollow page = %v, %v; want nothing", links, err)
	}

	p = htmlPage(t, "http://example.com/dir/", deepPage(`<meta name="description" content="deep">`, 600))
	links, err = fetch.NewRegistry().Extract(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != len(want) {
		t.Fatalf("links = %+v\nwant %+v", links, want)
	}
	for i := range want {
		if links[i] != want[i] {
			t.Errorf("link %d = %+v, want %+v", i, links[i], want[i])
		}
	}
}

func TestTitle(t *testing.T) {
	for body, want := range map[string]string{
		`<html><head><title>
			Plain   &amp; simple </title></head><body><title>second</title></body></html>`: "Plain & simple",
		`<body><svg><title>An icon</title></svg><title>The page</title>`: "The page",
		`<title>Unclosed <b>not a tag</b>`:                               "Unclosed <b>not a tag</b>",
		`<template><title>inert</title></template><p>no title`:           "",
		``: "",
	} {
		if got := htmlPage(t, "http://example.com/", body).Title(); got != want {
			t.Errorf("Title() of %q = %q, want %q", body, got, want)
		}
	}
	p := htmlPage(t, "http://example.com/", `<title>x</title>`)
	p.ContentType = "text/plain"
	if got := p.Title(); got != "" {
		t.Errorf("Title() of text/plain = %q", got)
	}
}

// TestForeignContent: in SVG a <title> or <style> holds markup, not raw
// text, so an unclosed one does not swallow the links after it.
func TestForeignContent(t *testing.T) {
	p := htmlPage(t, "http://example.com/", `<svg><title>Icon</svg><a href="/after-title">a</a>`+
		`<svg><style>.x{}</svg><a href="/after-style">b</a><math><mi><a href="/in-math">c</a></mi></math>`)
	links, err := fetch.NewRegistry().Extract(context.Background(), p)
	if got := strings.Join(urls(links), " "); err != nil || got != "http://example.com/after-title http://example.com/after-style http://example.com/in-math" {
		t.Errorf("links %s, %v", got, err)
	}
}
