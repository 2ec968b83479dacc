package live_test

import (
	"bytes"
	"context"
	"image"
	"image/color/palette"
	"image/draw"
	"image/png"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heedcrawl/heed/internal/testweb"
)

// TestScreenshot makes the README's picture of the live page during a
// crawl of the test web, when HEED_SCREENSHOT names the PNG to write:
//
//	HEED_SCREENSHOT=$PWD/crawler/live/screenshot.png go test ./crawler/live -run TestScreenshot
func TestScreenshot(t *testing.T) {
	out := os.Getenv("HEED_SCREENSHOT")
	if out == "" {
		t.Skip("HEED_SCREENSHOT names no file to write")
	}
	b := newBrowser(t)
	lc := startLiveCrawl(t)
	b.run(t, chromedp.Navigate(lc.page.URL+"/#token="+lc.token))
	waitFor(t, "twenty seconds of chart", func() bool {
		return eval[int](t, b, `+(document.querySelector('#chart polyline[data-series="2xx"]')?.getAttribute("data-points") || 0)`) >= 20
	})
	b.run(t, chromedp.Click(chromedp.CSS(`#hosts th[data-sort="requests"]`)))
	for auth, kind := range lc.broken {
		if kind == testweb.HostRateLimited {
			waitFor(t, "the rate-limited host's row", func() bool {
				return eval[bool](t, b, `!!document.querySelector('#hosts tr[data-key="`+auth+`"]')`)
			})
			b.run(t, chromedp.Click(chromedp.CSS(`#hosts tr[data-key="`+auth+`"]`)))
		}
	}
	waitFor(t, "the journal", func() bool { return eval[int](t, b, `document.querySelectorAll("#journal li").length`) > 0 })
	waitFor(t, "the frontier", func() bool { return eval[int](t, b, `document.querySelectorAll("#frontier tbody tr").length`) > 0 })
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	// Re-encoded with a palette at the best compression: the picture
	// lives in the repository.
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	pal := image.NewPaletted(img.Bounds(), palette.Plan9)
	draw.Draw(pal, pal.Rect, img, img.Bounds().Min, draw.Src)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, pal); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", out, buf.Len())
}
