package testweb

// The mixed hosts of a ShellWeb: pages the server builds and an
// application's pages on the same host, as real sites serve them — the
// web -render auto is measured on.

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

func (w *ShellWeb) serveMixed(rw http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/robots.txt":
		fmt.Fprint(rw, "User-agent: *\nDisallow: /private/\n")
	case p == "/analytics.js":
		scriptFile(rw, "window.analytics = {page: location.pathname};\n")
	case p == "/related.js":
		scriptFile(rw, relatedJS)
	case p == "/bundle.js":
		scriptFile(rw, fmt.Sprintf(bundleJS, w.cfg.Items))
	case p == "/app/" || strings.HasPrefix(p, "/app/item/"):
		serveHTMLString(rw, mixedShell)
	case p == "/":
		var b strings.Builder
		for i := range w.cfg.Items {
			fmt.Fprintf(&b, "<li><a href=\"/blog/post-%d\">Post %d</a></li>\n", i, i)
		}
		serveHTMLString(rw, fmt.Sprintf(mixedPage, "A site with a blog and an application", b.String(), ""))
	case strings.HasPrefix(p, "/blog/post-"):
		w.serveArticle(rw, r)
	default:
		http.NotFound(rw, r)
	}
}

// serveArticle serves /blog/post-N, and /blog/post-N/comments for the
// articles that load the widget linking there.
func (w *ShellWeb) serveArticle(rw http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/blog/post-")
	num, comments := strings.CutSuffix(rest, "/comments")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n >= w.cfg.Items || (comments && !widgetArticle(n)) {
		http.NotFound(rw, r)
		return
	}
	if comments {
		serveHTMLString(rw, fmt.Sprintf(mixedPage, "Comments on post "+num, `<li><a href="/blog/post-`+num+`">the post</a></li>`, ""))
		return
	}
	var b strings.Builder
	if n > 0 {
		fmt.Fprintf(&b, "<li><a href=\"/blog/post-%d\">previous</a></li>", n-1)
	}
	if n+1 < w.cfg.Items {
		fmt.Fprintf(&b, "<li><a href=\"/blog/post-%d\">next</a></li>", n+1)
	}
	widget := ""
	if widgetArticle(n) {
		widget = `<div id="related"></div><script src="/related.js"></script>`
	}
	serveHTMLString(rw, fmt.Sprintf(mixedPage, "Post "+num, b.String(), widget))
}

// widgetArticle reports whether article n loads the widget: every fifth.
func widgetArticle(n int) bool { return n%5 == 2 }

func scriptFile(rw http.ResponseWriter, js string) {
	rw.Header().Set("Content-Type", "text/javascript")
	rw.Header().Set("Cache-Control", "max-age=3600")
	fmt.Fprint(rw, js)
}

func serveHTMLString(rw http.ResponseWriter, page string) {
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(rw, page)
}

// mixedPage is a page the server builds: title, links, widget.
const mixedPage = `<!DOCTYPE html><html><head><title>%[1]s</title>
<script async src="/analytics.js"></script></head><body>
<nav><a href="/">Home</a> <a href="/app/">The application</a></nav>
<h1>%[1]s</h1><ul>%[2]s</ul>
<p>Text the server wrote for this page, long enough to read as content: a paragraph of an
article as a blog serves it, with its navigation, its links to the neighbouring posts and a
footer. A crawler reading the HTML finds all of it without running a script.</p>%[3]s
</body></html>`

// relatedJS is the widget: a link to the article's comments.
const relatedJS = `document.getElementById('related').insertAdjacentHTML('beforeend',
  '<a href="' + location.pathname + '/comments">Comments</a>');
`

// mixedShell is every page of the application under /app/: the site's
// navigation is in the HTML, the rest is built by bundle.js.
const mixedShell = `<!DOCTYPE html><html><head><title>app</title></head><body>
<nav><a href="/">Home</a> <a href="/app/">The application</a></nav>
<div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript>
<script src="/bundle.js"></script></body></html>`

// bundleJS builds the listing's links, or a detail page's text.
const bundleJS = `(() => {
  const items = %d;
  const root = document.getElementById('root');
  const path = location.pathname;
  if (path === '/app/') {
    for (let i = 0; i < items; i++) root.insertAdjacentHTML('beforeend', '<a href="/app/item/' + i + '">Item ' + i + '</a> ');
    return;
  }
  root.insertAdjacentHTML('beforeend', '<h1>' + path + '</h1><p>Text the application wrote for ' + path + ': a detail page whose content a static crawler never sees, and whose only links are the navigation the server already wrote.</p>');
})();
`
