package pool_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// instantEvents answers EventRecord and EventQuery at once, with no work
// behind them: what remains of Acquire and Release is the Slots' own cost.
type instantEvents struct{ *cudarttest.Fake }

func (instantEvents) EventRecord(int, cudart.Event, cudart.Stream) error { return nil }
func (instantEvents) EventQuery(int, cudart.Event) (bool, error)         { return true, nil }

// BenchmarkAcquireRelease is one request's Acquire and Release, and no work.
// "own-cost" answers the two CUDA calls at once, leaving the host time the
// Slots add; "runtime" makes them on the runtime cudarttest.Open gives
// (CUDA on a GPU host), with the stream synchronisation that completes the
// release, as a request's wait for its output does; "calls-only" makes
// those same three calls and nothing else, the part of "runtime" that is
// not the Slots'. "own-cost-parallel" is own-cost from GOMAXPROCS
// goroutines, a slot each.
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	b.Run("own-cost", func(b *testing.B) {
		s, _ := newSlots(b, instantEvents{cudarttest.NewFakeT(b)}, 1)
		loopAcquireRelease(b, s, func() error { return nil })
	})
	b.Run("own-cost-parallel", func(b *testing.B) {
		s, _ := newSlots(b, instantEvents{cudarttest.NewFakeT(b)}, runtime.GOMAXPROCS(0))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				sl, err := s.Acquire(ctx, "b1")
				if err != nil {
					b.Error(err)
					return
				}
				if err := s.Release(sl); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("runtime", func(b *testing.B) {
		rt := cudarttest.Open(b)
		s, _ := newSlots(b, rt, 1)
		sl, err := s.Acquire(ctx, "b1")
		require.NoError(b, err)
		st := must(sl.Stream())
		require.NoError(b, s.Release(sl))
		require.NoError(b, rt.StreamSynchronize(0, st))
		loopAcquireRelease(b, s, func() error { return rt.StreamSynchronize(0, st) })
	})
	b.Run("calls-only", func(b *testing.B) {
		rt := cudarttest.Open(b)
		st, err := rt.StreamCreate(0)
		require.NoError(b, err)
		defer func() { require.NoError(b, rt.StreamDestroy(0, st)) }()
		ev, err := rt.EventCreate(0)
		require.NoError(b, err)
		defer func() { require.NoError(b, rt.EventDestroy(0, ev)) }()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := rt.EventQuery(0, ev); err != nil {
				b.Fatal(err)
			}
			if err := rt.EventRecord(0, ev, st); err != nil {
				b.Fatal(err)
			}
			if err := rt.StreamSynchronize(0, st); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// loopAcquireRelease acquires and releases a slot, then calls after, until
// the benchmark ends.
func loopAcquireRelease(b *testing.B, s *pool.Slots, after func() error) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sl, err := s.Acquire(ctx, "b1")
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Release(sl); err != nil {
			b.Fatal(err)
		}
		if err := after(); err != nil {
			b.Fatal(err)
		}
	}
}
