//go:build unix

package pebblestore

import "syscall"

// offHeap returns n bytes of zeroed memory outside the Go heap, and the
// function that frees it; plain Go memory if the system refuses.
func offHeap(n int) ([]byte, func([]byte)) {
	if n == 0 {
		return nil, func([]byte) {}
	}
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return onHeap(n)
	}
	return mem, func(b []byte) { syscall.Munmap(b) }
}
