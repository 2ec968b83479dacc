package main

import (
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// pipeBuffered returns how many bytes wait in the pipe read by f, unread.
func pipeBuffered(t *testing.T, f *os.File) (n int, ok bool) {
	t.Helper()
	var count int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&count))); errno != 0 {
		t.Fatalf("FIONREAD: %v", errno)
	}
	return int(count), true
}
