//go:build !race

package nccl

// raceEnabled: see race_on_test.go.
const raceEnabled = false
