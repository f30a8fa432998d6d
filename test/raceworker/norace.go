//go:build !race

package raceworker

// Enabled says whether this binary is built with the race detector.
const Enabled = false
