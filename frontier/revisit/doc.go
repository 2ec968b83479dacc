// Package revisit is the mathematics of revisiting.
package revisit
