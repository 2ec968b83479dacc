// Command gocrawlrun crawls the seeds in a file with gocrawl v1.1.0, with
// its robots.txt support and the given delay (see runner.Gocrawl). The
// bench harness runs it as a separate process to measure it.
//
//	gocrawlrun [-agent NAME] [-ua STRING] [-delay DURATION] [-header-timeout DURATION] [-timeout DURATION] seeds.txt
package main

import (
	"os"

	"github.com/heedcrawl/heed/bench/internal/runcmd"
	"github.com/heedcrawl/heed/bench/runner"
)

func main() { os.Exit(runcmd.Main("gocrawlrun", runner.Gocrawl, os.Args[1:], os.Stderr)) }
