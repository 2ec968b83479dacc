// Command collyrun crawls the seeds in a file with colly v2, configured for
// polite crawling as its documentation recommends (see runner.Colly). The
// bench harness runs it as a separate process to measure it.
//
//	collyrun [-agent NAME] [-ua STRING] [-delay DURATION] [-header-timeout DURATION] [-timeout DURATION] seeds.txt
package main

import (
	"os"

	"github.com/heedcrawl/heed/bench/internal/runcmd"
	"github.com/heedcrawl/heed/bench/runner"
)

func main() { os.Exit(runcmd.Main("collyrun", runner.Colly, os.Args[1:], os.Stderr)) }
