package live

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/ratelimit"
)

// requestBench is a Recorder and its request's start and answer for
// request i, over 200 hosts.
type requestBench struct {
	r          *Recorder
	keys, urls []string
	now        time.Time
}

func newRequestBench() *requestBench {
	c, _ := crawler.New()
	rb := &requestBench{r: NewRecorder(c), keys: make([]string, 200), urls: make([]string, 200), now: time.Now()}
	for i := range rb.keys {
		rb.keys[i] = fmt.Sprintf("h%03d.example", i)
		rb.urls[i] = "http://" + rb.keys[i] + "/p"
	}
	return rb
}

// request records request i's start and its answer.
func (rb *requestBench) request(ctx context.Context, i int) {
	key := rb.keys[i%len(rb.keys)]
	at := rb.now.Add(time.Duration(i) * time.Millisecond)
	start := crawler.Request{Key: key, URL: rb.urls[i%len(rb.urls)], Started: at}
	rb.r.request(ctx, &start)
	end := start
	end.Answered, end.Status, end.Pace = at.Add(time.Millisecond), 200, ratelimit.HostStatus{Key: key}
	rb.r.request(ctx, &end)
}

// BenchmarkRecorderRequest is what the Recorder adds to one request: its
// start and its answer, over 200 hosts.
func BenchmarkRecorderRequest(b *testing.B) {
	rb := newRequestBench()
	ctx := context.Background()
	i := 0
	for b.Loop() {
		rb.request(ctx, i)
		i++
	}
}

// BenchmarkRecorderRequestParallel is BenchmarkRecorderRequest from many
// workers at once, as a crawl's are: what the Recorder's locks cost when
// requests to different hosts end together.
func BenchmarkRecorderRequestParallel(b *testing.B) {
	rb := newRequestBench()
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(64)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rb.request(ctx, int(next.Add(1)))
		}
	})
}

// BenchmarkOpenSockets is counting the process's open sockets for
// /api/status with 1,000 of them open, as a crawl of many hosts has.
func BenchmarkOpenSockets(b *testing.B) {
	for range 1000 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
	}
	if n := openSockets(); n >= 0 && n < 1000 {
		b.Fatalf("%d sockets counted, want at least 1000", n)
	}
	for b.Loop() {
		openSockets()
	}
}
