//go:build !unix

package pebblestore

import "os"

// flockFile is a no-op where flock is not available: the directory is then
// guarded by pebble's own lock alone, which names no holder.
func flockFile(f *os.File) (held bool, err error) { return false, nil }
