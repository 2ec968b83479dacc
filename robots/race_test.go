//go:build race

package robots

// raceEnabled tells tests that the race detector slows everything about
// tenfold, so the differential tests, which are single-threaded, sample.
const raceEnabled = true
