package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// CrawlerNames are the crawlers the harness knows, in table order.
var CrawlerNames = []string{"heed", "colly", "gocrawl"}

// Reasons for leaving heed out of a comparison.
var (
	ErrNoCrawlCommand    = errors.New("pending: crawl command (cmd/crawl does not exist yet)")
	ErrCrawlDoesNotBuild = errors.New("pending: crawl command (cmd/crawl does not build yet)")
	ErrNotRequested      = errors.New("not run (left out of -crawlers)")
)

// BuildCrawlers builds the named crawlers into dir: colly and gocrawl from
// the bench module at benchDir (cmd/collyrun, cmd/gocrawlrun), heed from
// repoDir/cmd/crawl. A crawler that cannot be built is left out and its
// reason returned in skipped, so the comparison runs with the others.
func BuildCrawlers(ctx context.Context, names []string, benchDir, repoDir, dir string) (crawlers []Crawler, skipped map[string]error) {
	skipped = make(map[string]error)
	for _, name := range CrawlerNames {
		if !slices.Contains(names, name) {
			skipped[name] = ErrNotRequested
		}
	}
	for _, name := range names {
		var pkgDir, pkg string
		var args func(Workload, string, string) []string
		switch name {
		case "heed":
			pkgDir, pkg, args = repoDir, "./cmd/crawl", heedArgs
			if !hasMainPackage(filepath.Join(repoDir, "cmd", "crawl")) {
				skipped[name] = ErrNoCrawlCommand
				continue
			}
		case "colly":
			pkgDir, pkg, args = benchDir, "./cmd/collyrun", runnerArgs
		case "gocrawl":
			pkgDir, pkg, args = benchDir, "./cmd/gocrawlrun", runnerArgs
		default:
			skipped[name] = fmt.Errorf("unknown crawler %q (known: %s)", name, strings.Join(CrawlerNames, ", "))
			continue
		}
		bin := filepath.Join(dir, name)
		if err := goBuild(ctx, pkgDir, pkg, bin); err != nil {
			if name == "heed" {
				err = fmt.Errorf("%w: %w", ErrCrawlDoesNotBuild, err)
			}
			skipped[name] = err
			continue
		}
		crawlers = append(crawlers, Crawler{Name: name, Path: bin, Args: args})
	}
	return crawlers, skipped
}

// heedArgs are the flags issue 5 fixes for `crawl`, set to match the other
// crawlers: robots obeyed (always), the workload's delay, one request at a
// time per host, any host, sitemaps on.
func heedArgs(w Workload, seedsFile, scratch string) []string {
	return []string{
		"-agent", Agent, "-ua", UserAgent,
		"-delay", w.Delay.String(),
		"-per-host", "1",
		"-scope", "any",
		"-sitemaps=true",
		"-o", filepath.Join(scratch, "pages.jsonl"),
		seedsFile,
	}
}

func runnerArgs(w Workload, seedsFile, _ string) []string {
	return []string{"-agent", Agent, "-ua", UserAgent, "-delay", w.Delay.String(), seedsFile}
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
