//go:build !unix

package pebblestore

// offHeap returns n bytes of zeroed memory; where mmap is not available, on
// the Go heap.
func offHeap(n int) ([]byte, func([]byte)) { return onHeap(n) }
