package pebblestore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// lockName is the file in a store's directory that is locked while a Store
// has it open, and that names the process holding it.
const lockName = "heed.lock"

// ErrLocked: the directory is open in a Store already, in this process or
// another. Open's error names the holder.
var ErrLocked = errors.New("directory locked by another Store")

// lockDir locks dir for one Store. On the operating system's file system it
// takes an flock on dir/heed.lock and writes the holder's pid and host name
// there, so that a second Open can say who holds it; on another file system
// (a test's) it takes that file system's lock.
func lockDir(fs vfs.FS, dir string) (io.Closer, error) {
	if fs != nil && fs != vfs.Default {
		c, err := fs.Lock(fs.PathJoin(dir, lockName))
		if err != nil {
			return nil, fmt.Errorf("pebblestore: %s is in use: %v: %w", dir, err, ErrLocked)
		}
		return c, nil
	}
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: lock: %w", err)
	}
	held, err := flockFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pebblestore: lock %s: %w", path, err)
	}
	if held {
		b, _ := io.ReadAll(io.LimitReader(f, 512))
		f.Close()
		holder := strings.TrimSpace(string(b))
		if holder == "" {
			holder = "another process (it has not written its pid yet)"
		}
		return nil, fmt.Errorf("pebblestore: %s is in use by %s: %w", dir, holder, ErrLocked)
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown"
	}
	holder := fmt.Sprintf("pid %d on host %s\n", os.Getpid(), host)
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(holder), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pebblestore: lock %s: %w", path, err)
	}
	return f, nil // closing the file releases the lock
}
