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

// instantQuery answers StreamQuery at once, with no work behind it: what
// remains of Acquire and Release is the Slots' own cost.
type instantQuery struct{ *cudarttest.Fake }

func (instantQuery) StreamQuery(int, cudart.Stream) (bool, error) { return true, nil }

// BenchmarkAcquireRelease is one request's Acquire and Release, and no work.
// "own-cost" answers Release's one CUDA call (a stream query) at once,
// leaving the host time the Slots add; "runtime" makes it on the runtime
// cudarttest.Open gives (CUDA on a GPU host), after the stream
// synchronisation a request makes to wait for its output; "calls-only"
// makes those same two calls and nothing else, the part of "runtime" that
// is not the Slots'. "own-cost-parallel" is own-cost from GOMAXPROCS
// goroutines, a slot each.
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	b.Run("own-cost", func(b *testing.B) {
		s, _ := newSlots(b, instantQuery{cudarttest.NewFakeT(b)}, 1)
		loopAcquireRelease(b, s, func() error { return nil })
	})
	b.Run("own-cost-parallel", func(b *testing.B) {
		s, _ := newSlots(b, instantQuery{cudarttest.NewFakeT(b)}, runtime.GOMAXPROCS(0))
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
		loopAcquireRelease(b, s, func() error { return rt.StreamSynchronize(0, st) })
	})
	b.Run("calls-only", func(b *testing.B) {
		rt := cudarttest.Open(b)
		st, err := rt.StreamCreate(0)
		require.NoError(b, err)
		defer func() { require.NoError(b, rt.StreamDestroy(0, st)) }()
		b.ReportAllocs()
		for b.Loop() {
			if err := rt.StreamSynchronize(0, st); err != nil {
				b.Fatal(err)
			}
			if _, err := rt.StreamQuery(0, st); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// loopAcquireRelease acquires a slot, calls before, and releases it, until
// the benchmark ends.
func loopAcquireRelease(b *testing.B, s *pool.Slots, before func() error) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sl, err := s.Acquire(ctx, "b1")
		if err != nil {
			b.Fatal(err)
		}
		if err := before(); err != nil {
			b.Fatal(err)
		}
		if err := s.Release(sl); err != nil {
			b.Fatal(err)
		}
	}
}
