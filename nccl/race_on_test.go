//go:build race

package nccl

// raceEnabled: the race detector is on, and sync.Pool drops items at random,
// so allocations cannot be counted.
const raceEnabled = true
