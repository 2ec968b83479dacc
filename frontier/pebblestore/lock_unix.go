//go:build unix

package pebblestore

import (
	"errors"
	"os"
	"syscall"
)

// flockFile takes an exclusive flock on f without waiting. flock locks
// belong to the open file, so a second Open in this process is refused as
// surely as another process, and the kernel drops the lock with its
// process: a lock file left behind by a dead crawl does not block.
func flockFile(f *os.File) (held bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return true, nil
		}
		return false, err
	}
}
