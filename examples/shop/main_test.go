package main

import (
	"bytes"
	"context"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heedcrawl/heed/fetch"
)

func TestLocalShop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, nil, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, &stderr)
	}
	// The shop listens on a port of its choosing; take it out.
	out := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).ReplaceAllString(stdout.String(), "SHOP")
	want := "" +
		"Blue mug                 8.50 EUR   SHOP/product/blue-mug\n" +
		"Chipped cup              0.50 EUR   SHOP/product/chipped-cup\n" +
		"Green mug                8.50 EUR   SHOP/product/green-mug\n" +
		"Kettle                   39.90 EUR  SHOP/product/kettle\n" +
		"Odd saucer               1.00 EUR   SHOP/product/odd-saucer\n" +
		"Tea towel                6.00 EUR   SHOP/product/tea-towel\n" +
		"Teapot                   24.00 EUR  SHOP/product/teapot\n"
	if out != want {
		t.Errorf("products:\n%s\nwant:\n%s", out, want)
	}
	// 13 pages: the catalogue seed and its pages 1-3, two API pages and the
	// seven products (the teapot, listed by both, once). Any navigation,
	// blog, review or cart link followed would make it more.
	summary := "shop: 7 products on 13 pages fetched in "
	refused := "robots.txt refused 1: /catalog/?page=1&sort=price\n"
	if s := stderr.String(); !strings.Contains(s, summary) || !strings.HasSuffix(s, refused) {
		t.Errorf("stderr:\n%s\nwant %q ... %q", s, summary, refused)
	}
}

func TestBadSelectorIsAnError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-links", "a[href", "http://shop.example/"}, &stdout, &stderr)
	if err == nil || !strings.HasPrefix(err.Error(), "-links: ") {
		t.Errorf("run with a broken selector = %v, want a -links error", err)
	}
}

func TestAPILinks(t *testing.T) {
	base, _ := url.Parse("http://shop.example/api/products?page=1")
	p := &fetch.Page{URL: base, ContentType: "application/json", Body: []byte(`{
		"products": [{"url": "/product/a"}, {"url": "https://cdn.example/product/b#reviews"},
		             {"url": "javascript:alert(1)"}, {"name": "no url"}],
		"next": "?page=2"}`)}
	links, err := apiLinks(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range links {
		got = append(got, l.URL+" "+l.Tag+" "+l.Rel)
	}
	want := []string{
		"http://shop.example/product/a json ",
		"https://cdn.example/product/b json ",
		"http://shop.example/api/products?page=2 json next",
	}
	if !slices.Equal(got, want) {
		t.Errorf("links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	p.Body = []byte("<html>not JSON</html>")
	if _, err := apiLinks(context.Background(), p); err == nil {
		t.Error("apiLinks on a non-JSON body: no error")
	}
}
