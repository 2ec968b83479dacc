package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CrawlerNames are the crawlers of the comparison, in table order.
// BuildCrawlers also knows heed's variants (see HeedVariants), which run the
// same crawl command with its state elsewhere.
var CrawlerNames = []string{"heed", "colly", "gocrawl"}

// HeedVariants describes the names of heed's variants.
const HeedVariants = "heed-state (-state in a fresh directory per run), " +
	"heed-redis (-redis, a fresh job per run), heed-redis-N (N processes of it at once), " +
	"heed-ui (-ui, its live page polled as a browser watching it would)"

// Reasons for leaving heed out of a comparison.
var (
	ErrNoCrawlCommand    = errors.New("pending: crawl command (cmd/crawl does not exist yet)")
	ErrCrawlDoesNotBuild = errors.New("pending: crawl command (cmd/crawl does not build yet)")
	ErrNoRedisFlag       = errors.New("pending: crawl -redis (cmd/crawl has no -redis flag yet)")
	ErrNotRequested      = errors.New("not run (left out of -crawlers)")
)

// BuildCrawlers builds the named crawlers into dir: colly and gocrawl from
// the bench module at benchDir (cmd/collyrun, cmd/gocrawlrun), heed and its
// variants from repoDir/cmd/crawl. A crawler that cannot be built is left
// out and its reason returned in skipped, so the comparison runs with the
// others.
func BuildCrawlers(ctx context.Context, names []string, benchDir, repoDir, dir string) (crawlers []Crawler, skipped map[string]error) {
	skipped = make(map[string]error)
	for _, name := range CrawlerNames {
		if !slices.Contains(names, name) {
			skipped[name] = ErrNotRequested
		}
	}
	var heedBin string
	var heedErr error
	for _, name := range names {
		c, ok := heedVariant(name)
		if ok {
			if heedBin == "" && heedErr == nil {
				heedBin = filepath.Join(dir, "heed")
				if !hasMainPackage(filepath.Join(repoDir, "cmd", "crawl")) {
					heedErr = ErrNoCrawlCommand
				} else if err := goBuild(ctx, repoDir, "./cmd/crawl", heedBin); err != nil {
					heedErr = fmt.Errorf("%w: %w", ErrCrawlDoesNotBuild, err)
				}
			}
			if heedErr == nil && c.Redis && !hasFlag(ctx, heedBin, "redis") {
				skipped[name] = ErrNoRedisFlag
				continue
			}
			if heedErr != nil {
				skipped[name] = heedErr
				continue
			}
			c.Path = heedBin
			crawlers = append(crawlers, c)
			continue
		}
		var pkg string
		switch name {
		case "colly":
			pkg = "./cmd/collyrun"
		case "gocrawl":
			pkg = "./cmd/gocrawlrun"
		default:
			skipped[name] = fmt.Errorf("unknown crawler %q (known: %s; %s)", name, strings.Join(CrawlerNames, ", "), HeedVariants)
			continue
		}
		bin := filepath.Join(dir, name)
		if err := goBuild(ctx, benchDir, pkg, bin); err != nil {
			skipped[name] = err
			continue
		}
		crawlers = append(crawlers, Crawler{Name: name, Path: bin, Args: runnerArgs})
	}
	return crawlers, skipped
}

// heedVariant returns the crawler a heed name stands for, without its path.
func heedVariant(name string) (Crawler, bool) {
	switch name {
	case "heed":
		return Crawler{Name: name, Args: heedArgs}, true
	case "heed-state":
		return Crawler{Name: name, Args: heedStateArgs}, true
	case "heed-redis":
		return Crawler{Name: name, Args: heedRedisArgs, Redis: true}, true
	case "heed-ui":
		return Crawler{Name: name, Args: heedUIArgs}, true
	}
	if rest, ok := strings.CutPrefix(name, "heed-redis-"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n >= 1 && n <= 64 && strconv.Itoa(n) == rest {
			return Crawler{Name: name, Args: heedRedisArgs, Redis: true, Procs: n}, true
		}
	}
	return Crawler{}, false
}

// heedArgs are the flags issue 5 fixes for `crawl`, set to match the other
// crawlers: robots obeyed (always), the workload's delay, one request at a
// time per host, any host, sitemaps on, the harness's HeaderTimeout; the
// state in memory.
func heedArgs(w Workload, env RunEnv) []string {
	return append(heedFlags(w, env), env.SeedsFile)
}

func heedFlags(w Workload, env RunEnv) []string {
	args := []string{
		"-agent", Agent, "-ua", UserAgent,
		"-delay", w.Delay.String(),
		"-per-host", "1",
		"-scope", "any",
		"-sitemaps=true",
		"-header-timeout", HeaderTimeout.String(),
	}
	if w.Workers > 0 {
		args = append(args, "-workers", strconv.Itoa(w.Workers))
	}
	if c := w.Continuous; c != nil {
		args = append(args, "-revisit", "-for", c.For.String(),
			"-min-revisit", c.MinRevisit.String(), "-max-revisit", c.MaxRevisit.String())
	}
	out := "pages.jsonl"
	if env.Proc > 1 {
		out = fmt.Sprintf("pages-%d.jsonl", env.Proc)
	}
	return append(args, "-o", filepath.Join(env.Scratch, out))
}

// heedStateArgs keep the crawl's state in pebble, in the run's scratch
// directory: a new crawl every run.
func heedStateArgs(w Workload, env RunEnv) []string {
	return append(heedFlags(w, env), "-state", filepath.Join(env.Scratch, "state"), env.SeedsFile)
}

// heedRedisArgs keep the crawl's state in the run's job in Redis, which
// every process of the run shares.
func heedRedisArgs(w Workload, env RunEnv) []string {
	return append(heedFlags(w, env), "-redis", env.RedisURL, "-job", env.Job, env.SeedsFile)
}

// hasFlag says whether the command's usage (-h) lists -name.
func hasFlag(ctx context.Context, bin, name string) bool {
	b, _ := exec.CommandContext(ctx, bin, "-h").CombinedOutput()
	return strings.Contains(string(b), "-"+name+" ")
}

func runnerArgs(w Workload, env RunEnv) []string {
	return []string{"-agent", Agent, "-ua", UserAgent, "-delay", w.Delay.String(), "-header-timeout", HeaderTimeout.String(), env.SeedsFile}
}

func hasMainPackage(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			return true
		}
	}
	return false
}

func goBuild(ctx context.Context, dir, pkg, out string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building %s: %w", pkg, err)
	}
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 2000 {
			msg = msg[:2000] + " …"
		}
		return fmt.Errorf("building %s in %s: %w\n%s", pkg, dir, err, msg)
	}
	return nil
}
