// Package render renders pages in headless Chromium, politely: every request
// the browser makes — the document, scripts, stylesheets, XHR and fetch(),
// iframes, workers, each redirect hop — is paused by the DevTools protocol's
// Fetch domain at the browser level and handed to a caller-supplied Policy,
// which decides whether it may be made (robots.txt, the address guard) and
// makes it through the caller's own fetcher and pacing. Nothing the page
// does reaches the network on its own.
//
// A Renderer owns one browser at a time (recycled after a number of pages or
// past a memory size, restarted when it crashes), renders up to Tabs pages
// at once, each in a fresh browser context (no cookies or storage carried
// from page to page), and bounds each render by wall time, subrequest count
// and bytes. A Cache shared by the Renderer's pages serves a site's scripts
// and stylesheets once per crawl, not once per page. Images, media and fonts
// are refused unless Config.AllowMedia is set: they do not change the DOM.
//
// The browser is Debian's chromium (Config.ExecPath); on Linux it dies with
// the process that started it (a parent-death signal), and Close kills its
// whole process group.
package render
