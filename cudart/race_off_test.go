//go:build !race

package cudart

// raceEnabled: see race_on_test.go.
const raceEnabled = false
