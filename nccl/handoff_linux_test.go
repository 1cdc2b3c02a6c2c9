package nccl

import (
	"syscall"
	"testing"
	"time"

	"github.com/cudapool/cudapool/internal/ncclabi"
)

// busy is a backend whose every call succeeds after busy work of its
// length, as a blocking communicator's eager all-reduce keeps the thread
// that made it inside NCCL for some µs.
type busy time.Duration

func (b busy) Do(fs []ncclabi.Frame) (int, error) {
	for start := time.Now(); time.Since(start) < time.Duration(b); {
	}
	return instant{}.Do(fs)
}

func (busy) Has(ncclabi.Call) bool { return true }

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkBlockingHandOff times a group of one all-reduce on each of 2
// blocking communicators, one after the other from one goroutine as tp's
// -bench-allreduce posts them, through a backend whose call takes 10 µs
// of busy work: what a call takes past 10 µs is the binding's, mostly the
// hand-off to the worker goroutine that makes the call and back (issue
// 33). cpu-us/op is the process's CPU time a call, the 10 µs included.
func BenchmarkBlockingHandOff(b *testing.B) {
	l := &Library{be: busy(10 * time.Microsecond), path: "busy"}
	const n = 2
	ops := make([]Op, n)
	for d := range n {
		c := l.newComm(uintptr(0x100+d), d, d, n, commConfig{timeout: DefaultTimeout, inline: true})
		ops[d] = c.AllReduceOp(0x1000, 0x2000, 1<<18, Float32, Sum, 0)
	}
	cpu := cpuTime(b)
	for b.Loop() {
		if err := l.Group(ops...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-us/op")
}
