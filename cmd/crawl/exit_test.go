package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heedcrawl/heed/crawler"
	"github.com/heedcrawl/heed/frontier"
	"github.com/heedcrawl/heed/frontier/redisstore"
)

// readmeExitStatus reads the README's "Exit status" paragraph, by the
// status each part of it is about: "0", "1", "2" and "128+n".
func readmeExitStatus(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(data), "\nExit status: ")
	if !ok {
		t.Fatal("README.md has no paragraph beginning \"Exit status: \"")
	}
	text, _, _ = strings.Cut(text, "\n\n")
	text = "Exit status: " + strings.Join(strings.Fields(text), " ")
	parts := map[string]string{}
	heads := regexp.MustCompile(`(?:^Exit status: |, )(0|1|2|128\+n) `).FindAllStringSubmatchIndex(text, -1)
	for i, h := range heads {
		end := len(text)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		parts[text[h[2]:h[3]]] = text[h[1]:end]
	}
	for _, status := range []string{"0", "1", "2", "128+n"} {
		if parts[status] == "" {
			t.Fatalf("README.md's exit statuses lack %s:\n%s", status, text)
		}
	}
	return parts
}

// TestExitStatus gives exitStatus each way a crawl can end, in each of its
// three modes, and checks the status against what the README says of it.
func TestExitStatus(t *testing.T) {
	readme := readmeExitStatus(t)
	var (
		storeErr  = fmt.Errorf("crawler: %w: pebblestore: %w", frontier.ErrStore, syscall.ENOSPC)
		redisErr  = fmt.Errorf("crawler: %w: redisstore: still failing after 30s: %w", frontier.ErrStore, syscall.ECONNREFUSED)
		lostErr   = fmt.Errorf("crawler: %w: %w", frontier.ErrStore, redisstore.ErrStateLost)
		outErr    = fmt.Errorf("write out.jsonl: %w", syscall.ENOSPC)
		outCause  = outputFailed{outErr}
		closeErr  = errors.New("sync: input/output error")
		noSeeds   = crawler.ErrNoSeeds
		cancelled = context.Canceled
	)
	for _, tc := range []struct {
		readme string // the words of the README's paragraph on it; "" for none
		o      outcome
		code   int
		how    ending
	}{
		// 0: the crawl ran to its end.
		{"the crawl ran to its end", outcome{mode: plainMode}, 0, endSeedsCrawled},
		{"the crawl ran to its end", outcome{mode: stateMode}, 0, endSeedsCrawled},
		{"the crawl ran to its end", outcome{mode: stateMode, started: true}, 0, endDone},
		{"the crawl ran to its end", outcome{mode: redisMode}, 0, endDone},
		{"the crawl ran to its end", outcome{mode: redisMode, started: true}, 0, endDone},
		{"robots.txt rules that keep every seed out included", outcome{mode: plainMode}, 0, endSeedsCrawled},
		{"robots.txt rules that keep every seed out included", outcome{mode: stateMode}, 0, endSeedsCrawled},
		// A complete crawl run again: with nothing new it says so; with
		// new seeds it crawls them.
		{"the crawl ran to its end", outcome{mode: stateMode, started: true, complete: true, nothingNew: true}, 0, endComplete},
		{"the crawl ran to its end", outcome{mode: stateMode, started: true, complete: true}, 0, endSeedsCrawled},
		{"the crawl ran to its end", outcome{mode: redisMode, started: true, complete: true, nothingNew: true}, 0, endComplete},
		{"the crawl ran to its end", outcome{mode: redisMode, started: true, complete: true, runErr: noSeeds}, 0, endComplete},
		{"the crawl ran to its end", outcome{mode: redisMode, started: true, complete: true}, 0, endDone},
		// -for stopped it: as a signal, but it ends well; a failure
		// before is still one.
		{"`-for` stopped it", outcome{mode: plainMode, runErr: cancelled, cause: timeUp{time.Second}}, 0, endTimeUp},
		{"`-for` stopped it", outcome{mode: stateMode, started: true, runErr: cancelled, cause: timeUp{time.Second}}, 0, endTimeUp},
		{"`-for` stopped it", outcome{mode: redisMode, runErr: cancelled, cause: timeUp{time.Second}}, 0, endTimeUp},
		{"`-for` stopped it", outcome{mode: plainMode, cause: timeUp{time.Second}}, 0, endTimeUp},
		{"the output or the `-state` could not be written", outcome{mode: stateMode, runErr: storeErr, cause: timeUp{time.Second}}, 1, endStoreFailed},
		{"the output or the `-state` could not be written", outcome{mode: plainMode, outErr: outErr, cause: timeUp{time.Second}}, 1, endOutputFailed},
		// A job joined with nothing queued or held.
		{"the crawl ran to its end", outcome{mode: redisMode, started: true, runErr: noSeeds}, 0, endNothingToDo},

		// 1: it failed.
		{"no seed could be fetched", outcome{mode: plainMode, seedsFailed: true}, 1, endSeedsCrawled},
		{"no seed could be fetched", outcome{mode: stateMode, seedsFailed: true}, 1, endSeedsCrawled},
		{"no seed could be fetched", outcome{mode: stateMode, started: true, complete: true, seedsFailed: true}, 1, endSeedsCrawled},
		{"no seed could be fetched", outcome{mode: plainMode, runErr: noSeeds}, 1, endRunFailed},
		{"no seed could be fetched", outcome{mode: stateMode, runErr: noSeeds}, 1, endRunFailed},
		{"no seed could be fetched", outcome{mode: redisMode, runErr: noSeeds}, 1, endRunFailed},
		// Seeds fetched in an earlier run, or by other processes.
		{"the crawl ran to its end", outcome{mode: stateMode, started: true, seedsFailed: true}, 0, endDone},
		{"the crawl ran to its end", outcome{mode: redisMode, seedsFailed: true}, 0, endDone},
		{"the output or the `-state` could not be written", outcome{mode: plainMode, outErr: outErr, cause: outCause, runErr: cancelled}, 1, endOutputFailed},
		{"the output or the `-state` could not be written", outcome{mode: stateMode, outErr: outErr, cause: outCause, runErr: storeErr}, 1, endOutputFailed},
		{"the output or the `-state` could not be written", outcome{mode: redisMode, outErr: outErr, cause: outCause, runErr: cancelled}, 1, endOutputFailed},
		{"the output or the `-state` could not be written", outcome{mode: plainMode, outErr: outErr}, 1, endOutputFailed},
		// A complete crawl run again wrote nothing: only closing its
		// output failed.
		{"", outcome{mode: stateMode, started: true, complete: true, nothingNew: true, outErr: outErr}, 0, endComplete},
		{"the output or the `-state` could not be written", outcome{mode: stateMode, runErr: storeErr}, 1, endStoreFailed},
		{"the output or the `-state` could not be written", outcome{mode: stateMode, closeErr: closeErr}, 1, endCloseFailed},
		{"the output or the `-state` could not be written", outcome{mode: stateMode, started: true, complete: true, nothingNew: true, closeErr: closeErr}, 1, endCloseFailed},
		{"Redis could not be reached or lost the job", outcome{mode: redisMode, runErr: redisErr}, 1, endStoreFailed},
		{"Redis could not be reached or lost the job", outcome{mode: redisMode, runErr: lostErr}, 1, endStoreFailed},
		{"Redis could not be reached or lost the job", outcome{mode: redisMode, started: true, runErr: redisErr, cause: signalled{syscall.SIGTERM}}, 1, endStoreFailed},
		{"Redis could not be reached or lost the job", outcome{mode: redisMode, closeErr: closeErr}, 1, endCloseFailed},
		{"it failed", outcome{mode: plainMode, runErr: errors.New("crawler: already running")}, 1, endRunFailed},
		// Before the crawl: Redis did not answer, or the start of the run
		// could not be recorded.
		{"Redis could not be reached or lost the job", outcome{mode: redisMode, refused: unavailable}, 1, endRefused},
		{"the output or the `-state` could not be written", outcome{mode: stateMode, refused: unavailable}, 1, endRefused},

		// 2: the command was given wrong. The step that finds it so says
		// why and refuses; TestUsageErrors, TestOutputFlag,
		// TestMetricsAddressInUse, TestStateLocked,
		// TestStateSettingsMismatch, TestRedisUsageErrors and
		// TestRedisSettingsMismatch run each case.
		{"bad flags", outcome{refused: badUsage}, 2, endRefused},
		{"an unreadable seeds file", outcome{refused: badUsage}, 2, endRefused},
		{"an `-o` or `-log` that would overwrite the seeds file", outcome{refused: badUsage}, 2, endRefused},
		{"a `-metrics` address that cannot be listened on", outcome{refused: badUsage}, 2, endRefused},
		{"a `-state` DIR in use or started with other flags", outcome{mode: stateMode, refused: badUsage}, 2, endRefused},
		{"a `-redis` job started with other flags", outcome{mode: redisMode, refused: badUsage}, 2, endRefused},
		{"a `-job` that `-redis` does not hold, joined without seeds", outcome{mode: redisMode, refused: badUsage}, 2, endRefused},
		// Standard input gave no seed, as a seeds file without one.
		{"", outcome{mode: plainMode, streamed: true, runErr: noSeeds}, 2, endNoSeeds},
		// -h.
		{"", outcome{refused: helpShown}, 0, endRefused},

		// 128+n: stopped by signal n.
		{"130 Ctrl-C (SIGINT)", outcome{mode: plainMode, runErr: cancelled, cause: signalled{os.Interrupt}}, 130, endSignalled},
		{"130 Ctrl-C (SIGINT)", outcome{mode: stateMode, runErr: cancelled, cause: signalled{os.Interrupt}}, 130, endSignalled},
		{"130 Ctrl-C (SIGINT)", outcome{mode: redisMode, runErr: cancelled, cause: signalled{os.Interrupt}}, 130, endSignalled},
		{"143 SIGTERM", outcome{mode: plainMode, runErr: cancelled, cause: signalled{syscall.SIGTERM}}, 143, endSignalled},
		{"143 SIGTERM", outcome{mode: stateMode, started: true, runErr: cancelled, cause: signalled{syscall.SIGTERM}}, 143, endSignalled},
		{"143 SIGTERM", outcome{mode: redisMode, started: true, runErr: cancelled, cause: signalled{syscall.SIGTERM}}, 143, endSignalled},
		{"129 SIGHUP", outcome{mode: plainMode, runErr: cancelled, cause: signalled{syscall.SIGHUP}}, 129, endSignalled},
		{"129 SIGHUP", outcome{mode: stateMode, runErr: cancelled, cause: signalled{syscall.SIGHUP}}, 129, endSignalled},
		{"129 SIGHUP", outcome{mode: redisMode, runErr: cancelled, cause: signalled{syscall.SIGHUP}}, 129, endSignalled},
		// A signal after the crawl ran to its end, and a state that
		// could not be closed after it.
		{"143 SIGTERM", outcome{mode: plainMode, cause: signalled{syscall.SIGTERM}}, 143, endSignalled},
		{"143 SIGTERM", outcome{mode: stateMode, cause: signalled{syscall.SIGTERM}, closeErr: closeErr}, 143, endSignalled},
		// Cancelled, not by a signal, as Ctrl-C.
		{"130 Ctrl-C (SIGINT)", outcome{mode: plainMode, runErr: cancelled}, 130, endCancelled},
	} {
		code, how := exitStatus(tc.o)
		if code != tc.code || how != tc.how {
			t.Errorf("exitStatus(%+v) = %d, %d; want %d, %d", tc.o, code, how, tc.code, tc.how)
		}
		if tc.readme == "" {
			continue
		}
		status := fmt.Sprint(tc.code)
		if tc.code >= 128 {
			status = "128+n"
		}
		if !strings.Contains(readme[status], tc.readme) {
			t.Errorf("exit status %d for %+v: the README's %s is %q, which does not say %q", tc.code, tc.o, status, readme[status], tc.readme)
		}
	}
}
