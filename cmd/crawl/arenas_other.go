//go:build !(linux && cgo)

package main

// limitMallocArenas does nothing where malloc is not glibc's, or cgo is
// off (pebble's memory is then Go's).
func limitMallocArenas() {}
