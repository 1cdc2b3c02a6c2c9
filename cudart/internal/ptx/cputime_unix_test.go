//go:build unix

package ptx

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, user and system, and
// whether the platform tells it: on a machine the benchmark shares, it
// counts what the parse costs where the wall clock counts the wait too.
func cpuTime() (time.Duration, bool) {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
