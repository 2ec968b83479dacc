package robots

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	temoto "github.com/temoto/robotstxt"
)

// benchAgent is the product token the corpus benchmarks check for: a
// crawler of its own name, so mostly the "*" groups apply, as in real use.
const benchAgent = "heedbot"

var benchSink int

// retainedBytes returns the heap that build's result keeps alive.
func retainedBytes(build func() any) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return float64(after.HeapAlloc) - float64(before.HeapAlloc)
}

// BenchmarkParseCorpus parses every file of the corpus per op. Heed reads
// at most MaxSize bytes of a file and is credited only with those (one
// 853 KB file is cut); temoto reads all. retained/input is the heap the
// parsed files keep alive over the bytes parsed.
func BenchmarkParseCorpus(b *testing.B) {
	files := loadCorpus(b)
	var heedBytes, allBytes int64
	for _, f := range files {
		heedBytes += int64(min(len(f.body), MaxSize))
		allBytes += int64(len(f.body))
	}
	b.Run("heed", func(b *testing.B) {
		b.SetBytes(heedBytes)
		b.ReportAllocs()
		for b.Loop() {
			for _, f := range files {
				benchSink += len(Parse(f.body).groups)
			}
		}
		b.ReportMetric(retainedBytes(func() any {
			out := make([]*Robots, len(files))
			for i, f := range files {
				out[i] = Parse(f.body)
			}
			return out
		})/float64(heedBytes), "retained/input")
	})
	b.Run("temoto", func(b *testing.B) {
		b.SetBytes(allBytes)
		b.ReportAllocs()
		for b.Loop() {
			for _, f := range files {
				if r, err := temoto.FromBytes(f.body); err == nil {
					benchSink += len(r.Sitemaps)
				}
			}
		}
		b.ReportMetric(retainedBytes(func() any {
			out := make([]*temoto.RobotsData, len(files))
			for i, f := range files {
				out[i], _ = temoto.FromBytes(f.body)
			}
			return out
		})/float64(allBytes), "retained/input")
	})
}

// matchCase is one check of the corpus: a URL against its parsed file.
type matchCase struct {
	heed   *Robots
	temoto *temoto.RobotsData // nil if temoto rejects the file
	url    string
	path   string // what temoto is given: path, params and query
}

var matchCases struct {
	sync.Once
	all, short []matchCase
}

func loadMatchCases(b *testing.B) (all, short []matchCase) {
	files := loadCorpus(b)
	matchCases.Do(func() {
		for _, f := range files {
			h := Parse(f.body)
			t, err := temoto.FromBytes(f.body)
			if err != nil {
				t = nil
			}
			for _, u := range f.urls {
				pq, slash := u, false
				if len(u) == 0 || u[0] != '/' {
					pq, slash = splitPathQuery(u)
				}
				if slash {
					pq = "/" + pq
				}
				c := matchCase{heed: h, temoto: t, url: u, path: pq}
				matchCases.all = append(matchCases.all, c)
				if len(u) <= 256 {
					matchCases.short = append(matchCases.short, c)
				}
			}
		}
	})
	return matchCases.all, matchCases.short
}

var medians sync.Map // benchmark name → median ns per check

// medianNs times every case alone (in batches of reps, to rise above the
// clock's resolution) and returns the median.
func medianNs(name string, cases []matchCase, check func(*matchCase) bool) float64 {
	if v, ok := medians.Load(name); ok {
		return v.(float64)
	}
	const reps = 8
	ns := make([]float64, 0, len(cases))
	for i := range cases {
		c := &cases[i]
		start := time.Now()
		for range reps {
			if check(c) {
				benchSink++
			}
		}
		ns = append(ns, float64(time.Since(start).Nanoseconds())/reps)
	}
	slices.Sort(ns)
	m := ns[len(ns)/2]
	medians.Store(name, m)
	return m
}

// BenchmarkMatchCorpus checks the corpus URLs, one per op, for benchAgent:
// "short" those of at most 256 bytes (median-ns is their median), "all"
// every URL. Heed is given the URL as is, temoto its path and query;
// files temoto rejects are left out of its runs.
func BenchmarkMatchCorpus(b *testing.B) {
	all, short := loadMatchCases(b)
	heed := func(c *matchCase) bool { return c.heed.Allowed(benchAgent, c.url) }
	heedGroup := func(c *matchCase) bool { return c.heed.Group(benchAgent).Allowed(c.path) }
	tem := func(c *matchCase) bool { return c.temoto.TestAgent(c.path, benchAgent) }
	accepted := func(cs []matchCase) []matchCase {
		return slices.DeleteFunc(slices.Clone(cs), func(c matchCase) bool { return c.temoto == nil })
	}
	for _, set := range []struct {
		name  string
		cases []matchCase
	}{{"short", short}, {"all", all}} {
		for _, impl := range []struct {
			name  string
			cases []matchCase
			check func(*matchCase) bool
		}{
			{"heed", set.cases, heed},
			{"heed-group", set.cases, heedGroup},
			{"temoto", accepted(set.cases), tem},
		} {
			name := set.name + "/" + impl.name
			b.Run(name, func(b *testing.B) {
				cs := impl.cases
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if impl.check(&cs[i]) {
						benchSink++
					}
					if i++; i == len(cs) {
						i = 0
					}
				}
				if set.name == "short" {
					b.ReportMetric(medianNs(name, cs, impl.check), "median-ns")
				}
			})
		}
	}
}

// worstCaseRobots is one group of n distinct rules like
// "Disallow: /*a*d*c*…*z" (19 wildcards; 18 random letters from the URL's
// alphabet, so a matcher has to walk the URL, and a final z it never finds).
func worstCaseRobots(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	for range n {
		sb.WriteString("Disallow: /")
		for k := range 19 {
			sb.WriteByte('*')
			if k == 18 {
				sb.WriteByte('z')
			} else {
				sb.WriteByte("abcd"[rng.IntN(4)])
			}
		}
		sb.WriteString("\n")
	}
	return []byte(sb.String())
}

// worstCaseURL is a path of l random bytes over {a,b,c,d,/}.
func worstCaseURL(l int) string {
	rng := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, l)
	b[0] = '/'
	for i := 1; i < l; i++ {
		b[i] = "abcd/"[rng.IntN(5)]
	}
	return string(b)
}

// slowTemoto reports whether to run temoto's worst cases that take seconds
// per op (N×L above 10^6: about 4.4 s at 10^7, 44 s at 10^8).
func slowTemoto() bool { return os.Getenv("HEED_BENCH_SLOW_TEMOTO") != "" }

// BenchmarkWorstCaseMatch checks one URL path of L bytes against one group
// of N wildcard rules that all fail late.
func BenchmarkWorstCaseMatch(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		body := worstCaseRobots(n)
		h := Parse(body)
		t, err := temoto.FromBytes(body)
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range []int{100, 1000, 10000} {
			path := worstCaseURL(l)
			b.Run(fmt.Sprintf("N=%d/L=%d/heed", n, l), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if h.Allowed("heedbot", path) {
						benchSink++
					}
				}
			})
			b.Run(fmt.Sprintf("N=%d/L=%d/temoto", n, l), func(b *testing.B) {
				if n*l > 1e6 && !slowTemoto() {
					b.Skip("seconds per op; set HEED_BENCH_SLOW_TEMOTO=1 to run")
				}
				b.ReportAllocs()
				for b.Loop() {
					if t.TestAgent(path, "heedbot") {
						benchSink++
					}
				}
			})
		}
	}
}

// BenchmarkWorstCaseParse parses the worst-case files.
func BenchmarkWorstCaseParse(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		body := worstCaseRobots(n)
		b.Run(fmt.Sprintf("N=%d/heed", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				benchSink += len(Parse(body).groups)
			}
		})
		b.Run(fmt.Sprintf("N=%d/temoto", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if r, err := temoto.FromBytes(body); err == nil {
					benchSink += len(r.Sitemaps)
				}
			}
		})
	}
}
