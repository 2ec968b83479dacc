package live

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/ratelimit"
)

// BenchmarkRecorderRequest is what the Recorder adds to one request: its
// start and its answer, over 200 hosts.
func BenchmarkRecorderRequest(b *testing.B) {
	c, _ := crawler.New()
	r := NewRecorder(c)
	ctx := context.Background()
	keys, urls := make([]string, 200), make([]string, 200)
	for i := range keys {
		keys[i] = fmt.Sprintf("h%03d.example", i)
		urls[i] = "http://" + keys[i] + "/p"
	}
	now := time.Now()
	i := 0
	for b.Loop() {
		key := keys[i%len(keys)]
		at := now.Add(time.Duration(i) * time.Millisecond)
		start := crawler.Request{Key: key, URL: urls[i%len(urls)], Started: at}
		r.request(ctx, &start)
		end := start
		end.Answered, end.Status, end.Pace = at.Add(time.Millisecond), 200, ratelimit.HostStatus{Key: key}
		r.request(ctx, &end)
		i++
	}
}

// BenchmarkRecorderRequestParallel is BenchmarkRecorderRequest from many
// workers at once, as a crawl's are: what the Recorder's locks cost when
// requests to different hosts end together.
func BenchmarkRecorderRequestParallel(b *testing.B) {
	c, _ := crawler.New()
	r := NewRecorder(c)
	ctx := context.Background()
	keys, urls := make([]string, 200), make([]string, 200)
	for i := range keys {
		keys[i] = fmt.Sprintf("h%03d.example", i)
		urls[i] = "http://" + keys[i] + "/p"
	}
	now := time.Now()
	var next atomic.Int64
	b.SetParallelism(64)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1))
			key := keys[i%len(keys)]
			at := now.Add(time.Duration(i) * time.Millisecond)
			start := crawler.Request{Key: key, URL: urls[i%len(urls)], Started: at}
			r.request(ctx, &start)
			end := start
			end.Answered, end.Status, end.Pace = at.Add(time.Millisecond), 200, ratelimit.HostStatus{Key: key}
			r.request(ctx, &end)
		}
	})
}
