package nccl_test

import (
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/nccl"
)

// BenchmarkAllReduceWait times what a call costs past the moment its wait
// could end: rank 0 posts an all-reduce and waits for rank 1, which posts
// about 20 µs later; the metric late-us/op runs from rank 1's post to rank
// 0's return. Rank 1 sleeps in the kernel (nanosleep), not on Go's timers,
// before and after its post, so the Go runtime idles as it does on a GPU
// while NCCL's own threads work: a wait that sleeps between its first polls
// then returns late by what Go's timers take to wake it (issue 33: 0.9 ms a
// call on a GPU, against 15 µs from C).
func BenchmarkAllReduceWait(b *testing.B) {
	r := newRig(b, 2, 16)
	errs := make([]error, 2)
	var posted atomic.Int64
	var late time.Duration
	turn := make(chan struct{})
	nap := func(d time.Duration) { _ = syscall.Nanosleep(&syscall.Timespec{Nsec: d.Nanoseconds()}, nil) }
	b.ResetTimer()
	ranks(2, func(d int) {
		for range b.N {
			if d == 0 {
				turn <- struct{}{}
			} else {
				<-turn
				nap(20 * time.Microsecond)
				posted.Store(time.Now().UnixNano())
			}
			if errs[d] = r.comms[d].AllReduce(r.a[d], r.b[d], 4, nccl.Float32, nccl.Sum, r.s[d]); errs[d] != nil {
				return
			}
			if d == 0 {
				late += time.Since(time.Unix(0, posted.Load()))
			} else {
				nap(100 * time.Microsecond)
			}
			if errs[d] = r.fake.StreamSynchronize(d, r.s[d]); errs[d] != nil {
				return
			}
		}
	})
	b.StopTimer()
	for d := range 2 {
		require.NoError(b, errs[d], "rank %d", d)
	}
	b.ReportMetric(float64(late.Microseconds())/float64(b.N), "late-us/op")
}
