//go:build !unix

package ptx

import "time"

// cpuTime is not told on this platform: the benchmarks report wall time
// alone.
func cpuTime() (time.Duration, bool) { return 0, false }
