package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/robots"
	"github.com/heedcrawl/heed/robots/gate"
)

// runRobots implements "crawl robots URL|FILE [agent] [path ...]": it shows
// how heed reads a robots.txt for an agent — the group chosen, its rules,
// Crawl-delay, sitemaps and the verdict for each path.
func runRobots(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawl robots", flag.ContinueOnError)
	ua := fs.String("ua", "", "User-Agent header for the fetch (default built from the agent)")
	timeout, headerTimeout := 30*time.Second, 15*time.Second
	fs.Var((*durationFlag)(&timeout), "timeout", "timeout for each robots.txt request, body included")
	fs.Var((*durationFlag)(&headerTimeout), "header-timeout", "timeout for the response headers of each robots.txt request")
	if code, ok := parseFlags(fs, args, func(w io.Writer) { robotsUsage(fs, w) }, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() < 1 {
		fmt.Fprintln(stderr, "crawl robots: want a URL or a robots.txt file; see crawl robots -h")
		return 2
	}
	target := fs.Arg(0)
	agent := crawler.DefaultAgent
	if fs.NArg() >= 2 {
		agent = fs.Arg(1)
	}
	paths := fs.Args()[min(2, fs.NArg()):]

	var (
		rb      *robots.Robots
		source  string
		outcome string
	)
	if st, err := os.Stat(target); err == nil && !st.IsDir() {
		body, err := os.ReadFile(target)
		if err != nil {
			fmt.Fprintf(stderr, "crawl robots: %v\n", err)
			return 2
		}
		rb, source, outcome = robots.Parse(body), target, fmt.Sprintf("read from file (%d bytes)", len(body))
		if len(paths) == 0 {
			paths = []string{"/"}
		}
	} else {
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fmt.Fprintf(stderr, "crawl robots: %q is neither a readable file nor an http(s) URL; see crawl robots -h\n", target)
			return 2
		}
		// The crawler's own fetcher and gate read robots.txt here, so the
		// verdicts are the ones a crawl would reach.
		opts := []crawler.Option{
			crawler.WithAgent(agentToken(agent)),
			crawler.WithHeaderTimeout(headerTimeout), crawler.WithFetchTimeout(timeout),
		}
		if *ua != "" {
			opts = append(opts, crawler.WithUserAgent(*ua))
		}
		c, err := crawler.New(opts...)
		if err != nil {
			fmt.Fprintf(stderr, "crawl robots: %v\n", err)
			return 2
		}
		e, err := c.RobotsEntry(ctx, target)
		if err != nil {
			fmt.Fprintf(stderr, "crawl robots: %v\n", err)
			return 1
		}
		rb, source = e.Robots, e.URL
		outcome = fmt.Sprintf("%s (status %d)", e.Outcome, e.Status)
		if e.Err != nil {
			outcome += ": " + e.Err.Error()
		}
		switch e.Outcome {
		case gate.OutcomeUnavailable:
			outcome += " — no robots.txt: everything allowed"
		case gate.OutcomeUnreachable:
			outcome += " — unreachable: everything disallowed until it can be fetched"
		}
		if len(paths) == 0 {
			paths = []string{gatePath(u)}
		}
	}
	printRobots(stdout, source, outcome, rb, agent, paths)
	return 0
}

// robotsUsage is crawl robots -h.
func robotsUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `Usage: crawl robots [flags] URL|FILE [agent] [path ...]

Shows how heed reads a robots.txt for agent (default "heed"): the outcome of
the fetch, the groups chosen, their rules in precedence order, Crawl-delay,
sitemaps, and the verdict with the deciding rule for each path (the URL's own
path when none is given). URL is any URL of the site; FILE a robots.txt on disk.

Flags:
`)
	fs.VisitAll(func(fl *flag.Flag) { printFlag(w, fl) })
}

// agentToken returns the product token of agent ("FooBot/1.2" → "FooBot"),
// or heed's own when agent has none.
func agentToken(agent string) string {
	if t := robots.ProductToken(agent); t != "" {
		return t
	}
	return crawler.DefaultAgent
}

func gatePath(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}

func printRobots(w io.Writer, source, outcome string, rb *robots.Robots, agent string, paths []string) {
	fmt.Fprintf(w, "robots.txt: %s\n", source)
	fmt.Fprintf(w, "outcome:    %s\n", outcome)
	fmt.Fprintf(w, "agent:      %s\n", agent)
	g := rb.Group(agent)
	if g == nil {
		fmt.Fprintln(w, "group:      none applies (no group names this agent and there is no \"*\" group): everything allowed")
	} else {
		var lines []string
		for _, og := range rb.Groups() {
			if groupMatches(og, agent, g) {
				lines = append(lines, fmt.Sprintf("line %d (%s)", og.Line(), strings.Join(og.Agents(), ", ")))
			}
		}
		fmt.Fprintf(w, "group:      %s\n", strings.Join(lines, "; "))
		rules := g.Rules()
		fmt.Fprintf(w, "rules:      %d, longest match wins, Allow wins ties\n", len(rules))
		for _, r := range rules {
			fmt.Fprintf(w, "  line %-5d %-9s %s\n", r.Line, verb(r.Allow)+":", r.Pattern)
		}
	}
	if d, ok := rb.CrawlDelay(agent); ok {
		fmt.Fprintf(w, "crawl-delay: %v\n", d)
	} else {
		fmt.Fprintln(w, "crawl-delay: none")
	}
	if h := rb.Host(); h != "" {
		fmt.Fprintf(w, "host:       %s\n", h)
	}
	sm := rb.Sitemaps()
	fmt.Fprintf(w, "sitemaps:   %d\n", len(sm))
	for _, s := range sm {
		fmt.Fprintf(w, "  %s\n", s)
	}
	fmt.Fprintln(w, "verdicts:")
	for _, p := range paths {
		rule, ok := g.Match(p)
		allowed := rb.Allowed(agent, p)
		why := "no rule matches"
		if ok {
			why = fmt.Sprintf("line %d %s: %s", rule.Line, verb(rule.Allow), rule.Pattern)
		}
		if p == "/robots.txt" {
			why = "robots.txt itself is always allowed"
		}
		fmt.Fprintf(w, "  %-10s %s  (%s)\n", map[bool]string{true: "allowed", false: "DISALLOWED"}[allowed], p, why)
	}
}

// groupMatches reports whether og is one of the groups merged into chosen
// for agent: it names agent's token, or it is a "*" group and no group names
// the agent.
func groupMatches(og *robots.Group, agent string, chosen *robots.Group) bool {
	token := strings.ToLower(agentToken(agent))
	chosenSpecific := false
	for _, a := range chosen.Agents() {
		if strings.ToLower(a) == token {
			chosenSpecific = true
		}
	}
	for _, a := range og.Agents() {
		if chosenSpecific && strings.ToLower(a) == token || !chosenSpecific && a == "*" {
			return true
		}
	}
	return false
}

func verb(allow bool) string {
	if allow {
		return "Allow"
	}
	return "Disallow"
}
