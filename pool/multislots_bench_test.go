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
	eachLoad(b, slots, func(b *testing.B, rt instantQuery, devs int) {
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
		parallelAcquireRelease(b, a.Acquire, a.Release)
	})
}

// BenchmarkMultiSlotsAcquireGroup is one request's AcquireGroup and the
// group's Release, as BenchmarkMultiSlotsAcquire: the host cost of taking
// slot k of every device, for 4 slot indices on 1, 2 or 4 devices. "free"
// has a group free for each goroutine, "contended" most calls wait for a
// group's release.
func BenchmarkMultiSlotsAcquireGroup(b *testing.B) {
	const slots = 4
	eachLoad(b, slots, func(b *testing.B, rt instantQuery, devs int) {
		m, err := pool.NewMultiSlots(rt, devices(devs), slots, newServingLayout(b).layout())
		require.NoError(b, err)
		b.Cleanup(func() { assert.NoError(b, m.Close()) })
		parallelAcquireRelease(b, m.AcquireGroup, pool.SlotGroup.Release)
	})
}

// eachLoad runs bench on a fake of 1, 2 and 4 devices that answers every
// stream query at once, under each load: "free" runs GOMAXPROCS
// goroutines, skipped past free of them; "contended" 8 for each of
// GOMAXPROCS.
func eachLoad(b *testing.B, free int, bench func(b *testing.B, rt instantQuery, devs int)) {
	for _, load := range []struct {
		name        string
		parallelism int
	}{{"free", 1}, {"contended", 8}} {
		for _, devs := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/%d-devices", load.name, devs), func(b *testing.B) {
				if load.parallelism == 1 && runtime.GOMAXPROCS(0) > free {
					b.Skipf("GOMAXPROCS %d is more than the %d free", runtime.GOMAXPROCS(0), free)
				}
				b.SetParallelism(load.parallelism)
				bench(b, instantQuery{cudarttest.NewFakeT(b, cudarttest.WithDevices(devs))}, devs)
			})
		}
	}
}

// parallelAcquireRelease acquires and releases from every goroutine of
// b.RunParallel.
func parallelAcquireRelease[H any](b *testing.B, acquire func(context.Context, string) (H, error), release func(H) error) {
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h, err := acquire(ctx, "b1")
			if err != nil {
				b.Error(err)
				return
			}
			if err := release(h); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
