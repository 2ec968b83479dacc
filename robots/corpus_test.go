package robots

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// corpusFile is one robots.txt of the shared corpus with the URLs to check
// against it.
type corpusFile struct {
	host string
	body []byte
	urls []string
}

var corpusOnce struct {
	sync.Once
	files []corpusFile
	err   error
}

// corpusDir is where CI and developers keep the shared corpus: ../shared
// relative to the repository root. HEED_ROBOTS_CORPUS overrides it.
func corpusDir() string {
	if d := os.Getenv("HEED_ROBOTS_CORPUS"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared", "robots-corpus")
}

// loadCorpus returns the corpus, or skips tb if it is absent.
func loadCorpus(tb testing.TB) []corpusFile {
	tb.Helper()
	dir := corpusDir()
	if _, err := os.Stat(filepath.Join(dir, "robots")); err != nil {
		tb.Skipf("robots corpus not found at %s (set HEED_ROBOTS_CORPUS): %v", dir, err)
	}
	corpusOnce.Do(func() {
		entries, err := os.ReadDir(filepath.Join(dir, "robots"))
		if err != nil {
			corpusOnce.err = err
			return
		}
		for _, e := range entries {
			body, err := os.ReadFile(filepath.Join(dir, "robots", e.Name()))
			if err != nil {
				corpusOnce.err = err
				return
			}
			f := corpusFile{host: e.Name(), body: body}
			list, err := os.ReadFile(filepath.Join(dir, "urls", e.Name()))
			if err != nil {
				corpusOnce.err = err
				return
			}
			sc := bufio.NewScanner(bytes.NewReader(list))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if u := sc.Text(); u != "" {
					f.urls = append(f.urls, u)
				}
			}
			if err := sc.Err(); err != nil {
				corpusOnce.err = err
				return
			}
			corpusOnce.files = append(corpusOnce.files, f)
		}
	})
	if corpusOnce.err != nil {
		tb.Fatalf("reading robots corpus: %v", corpusOnce.err)
	}
	if len(corpusOnce.files) == 0 {
		tb.Skipf("robots corpus at %s is empty", dir)
	}
	return corpusOnce.files
}
