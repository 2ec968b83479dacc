package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles starts a CPU profile into cpuFile (if named) and returns the
// function that stops it and writes a heap profile into memFile (if named).
func startProfiles(cpuFile, memFile string) (stop func() error, err error) {
	var cpu *os.File
	if cpuFile != "" {
		if cpu, err = os.Create(cpuFile); err != nil {
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			errs = append(errs, cpu.Close())
		}
		if memFile != "" {
			mf, err := os.Create(memFile)
			if err != nil {
				return errors.Join(append(errs, fmt.Errorf("-memprofile: %w", err))...)
			}
			runtime.GC()
			errs = append(errs, pprof.WriteHeapProfile(mf), mf.Close())
		}
		return errors.Join(errs...)
	}, nil
}
