package pool_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// acquirer is what the benchmark drives: one Slots or a MultiSlots.
type acquirer interface {
	Acquire(ctx context.Context, profile string) (pool.Slot, error)
	Release(sl pool.Slot) error
}

// BenchmarkMultiSlotsAcquire is one request's Acquire and Release, with no
// work and the stream query answered at once: the host cost of finding a
// slot across devices, against one Slots holding as many slots (4 in all,
// on 1, 2 or 4 devices). "free" runs GOMAXPROCS goroutines, up to 4, so
// that a slot is free for each; "contended" runs 8 for each of GOMAXPROCS,
// so that most calls wait for a release.
func BenchmarkMultiSlotsAcquire(b *testing.B) {
	const slots = 4
	for _, load := range []struct {
		name        string
		parallelism int
	}{{"free", 1}, {"contended", 8}} {
		for _, devs := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/%d-devices", load.name, devs), func(b *testing.B) {
				if load.parallelism == 1 && runtime.GOMAXPROCS(0) > slots {
					b.Skipf("GOMAXPROCS %d is more than the %d slots", runtime.GOMAXPROCS(0), slots)
				}
				rt := instantQuery{cudarttest.NewFakeT(b, cudarttest.WithDevices(devs))}
				layout := newServingLayout(b).layout()
				var a acquirer
				if devs == 1 {
					s, err := pool.NewSlots(rt, slots, layout)
					require.NoError(b, err)
					b.Cleanup(func() { assert.NoError(b, s.Close()) })
					a = s
				} else {
					m, err := pool.NewMultiSlots(rt, devices(devs), slots/devs, layout)
					require.NoError(b, err)
					b.Cleanup(func() { assert.NoError(b, m.Close()) })
					a = m
				}
				b.SetParallelism(load.parallelism)
				parallelAcquireRelease(b, a)
			})
		}
	}
}

func parallelAcquireRelease(b *testing.B, a acquirer) {
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			sl, err := a.Acquire(ctx, "b1")
			if err != nil {
				b.Error(err)
				return
			}
			if err := a.Release(sl); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
