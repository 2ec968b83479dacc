//go:build !race

package robots

const raceEnabled = false
