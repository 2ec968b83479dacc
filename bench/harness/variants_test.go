package harness

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHeedVariants(t *testing.T) {
	w := Workload{Name: "f", Workers: 4}
	env := RunEnv{SeedsFile: "seeds.txt", Scratch: "/s", Proc: 2, RedisURL: "redis://127.0.0.1:1", Job: "bench-f-1"}
	for _, tc := range []struct {
		name  string
		procs int
		redis bool
		want  string // in the arguments, which end with the seeds file
	}{
		{"heed", 0, false, "-workers 4 -o /s/pages-2.jsonl seeds.txt"},
		{"heed-state", 0, false, "-o /s/pages-2.jsonl -state /s/state seeds.txt"},
		{"heed-redis", 0, true, "-redis redis://127.0.0.1:1 -job bench-f-1 seeds.txt"},
		{"heed-redis-4", 4, true, "-job bench-f-1 seeds.txt"},
	} {
		c, ok := heedVariant(tc.name)
		if !ok || c.Name != tc.name || c.Procs != tc.procs || c.Redis != tc.redis {
			t.Errorf("heedVariant(%q) = %+v, %v", tc.name, c, ok)
			continue
		}
		if args := strings.Join(c.Args(w, env), " "); !strings.HasSuffix(args, tc.want) || !strings.Contains(args, "-scope any") {
			t.Errorf("%s: args %q, want them to end with %q", tc.name, args, tc.want)
		}
	}
	for _, name := range []string{"heed-redis-0", "heed-redis-04", "heed-redis-x", "heed-redis-", "heedx", "colly"} {
		if c, ok := heedVariant(name); ok {
			t.Errorf("heedVariant(%q) = %+v, want no variant", name, c)
		}
	}
}

func TestParseRedisInfo(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=30,usec=900,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_fcall:calls=10,usec=600,usec_per_call=60.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hget:calls=70,usec=70,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=5,usec=70,usec_per_call=14.00,rejected_calls=0,failed_calls=0\r\n" +
		"\r\n# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.000000\r\n"
	before, err := parseRedisInfo("# Commandstats\r\ncmdstat_hget:calls=10,usec=1\r\ncmdstat_info:calls=1,usec=1\r\n# CPU\r\nused_cpu_sys:1.0\r\nused_cpu_user:1.0\r\n")
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseRedisInfo(info)
	if err != nil {
		t.Fatal(err)
	}
	if after.CPU != 3750*time.Millisecond || after.Calls["evalsha"] != 30 || after.Calls["fcall"] != 10 || after.ScriptTime != 1500*time.Microsecond {
		t.Errorf("parsed %+v", after)
	}
	use := after.Sub(before)
	// Of the 4 INFO calls since, one read the counters before.
	if use.ScriptTime != 1500*time.Microsecond {
		t.Errorf("script time %v, want 1.5ms (EVALSHA and FCALL)", use.ScriptTime)
	}
	if use.Scripts() != 40 || use.Commands() != 103 || use.Calls["info"] != 3 || use.CPU != 1750*time.Millisecond {
		t.Errorf("use %+v: %d scripts, %d commands; want 40 and 103 (the reading's INFO left out), CPU 1.75 s", use, use.Scripts(), use.Commands())
	}
	if use.Time["hget"] != 69*time.Microsecond || use.Time["fcall"] != 600*time.Microsecond || use.Time["info"] != 0 {
		t.Errorf("time by command %v; want hget 69µs, fcall 600µs, INFO left out", use.Time)
	}
	// Per page of 10: most first, those under 0.1 µs left out.
	if got, want := use.TimePerPage(10), "evalsha 90.00 fcall 60.00 hget 6.90"; got != want {
		t.Errorf("TimePerPage = %q, want %q", got, want)
	}
	if got, want := use.TimePerPage(1000), "evalsha 0.90 fcall 0.60"; got != want {
		t.Errorf("TimePerPage(1000) = %q, want %q", got, want)
	}
	for _, bad := range []string{"cmdstat_get:calls=many", "cmdstat_get:calls=1,usec=some"} {
		if _, err := parseRedisInfo(bad); err == nil {
			t.Errorf("garbled commandstats line %q parsed", bad)
		}
	}
}

func TestRowOrder(t *testing.T) {
	sums := []Summary{{Crawler: "gocrawl", Workload: "a"}, {Crawler: "heed-redis-10", Workload: "a"},
		{Crawler: "heed-redis-2", Workload: "a"}, {Crawler: "heed", Workload: "a"}, {Crawler: "heed-state", Workload: "b"}}
	skipped := map[string]error{"colly": ErrNotRequested, "heed-redis": ErrNoRedisFlag, "nonsense": ErrNotRequested}
	got := rowOrder(sums, Workload{Name: "a"}, skipped)
	want := []string{"heed", "heed-redis", "heed-redis-2", "heed-redis-10", "colly", "gocrawl"}
	if !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	got = rowOrder(sums, Workload{Name: "a", HeedOnly: true}, skipped)
	if want := []string{"heed", "heed-redis", "heed-redis-2", "heed-redis-10"}; !slices.Equal(got, want) {
		t.Errorf("rows of a HeedOnly workload %v, want %v", got, want)
	}
}
