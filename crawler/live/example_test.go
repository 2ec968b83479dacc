package live_test

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/crawler/live"
)

// Serve a crawl's live page on loopback while it runs: the page at /, its
// JSON under /api/, and controls that need the token.
func Example() {
	c, err := crawler.New(crawler.WithMaxPages(100))
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	token := live.NewToken()
	page := live.NewHandler(live.NewRecorder(c), live.Options{Token: token, Stop: stop})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: page}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Println("token is", len(token), "hex digits")
	_ = ctx // c.Run(ctx, seeds...) crawls while the page shows it
	// Output: token is 32 hex digits
}
