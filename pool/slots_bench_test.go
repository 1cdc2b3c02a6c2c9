package pool_test

import (
	"context"
	"errors"
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

// BenchmarkNewSlots is NewSlots of many slots of one 256-byte buffer on the
// fake (Close is not timed): "fit" makes 10,000 to 100,000 slots, each with
// its stream and the pool's event for it, placed and committed; "too-many"
// asks for 2^20 slots of 1 MiB on a device of 80 GiB, refused before any
// stream is made. Setup is linear in the slots: fit-100000 takes about ten
// times fit-10000.
func BenchmarkNewSlots(b *testing.B) {
	tiny := pool.NewProfile("tiny")
	_, err := tiny.Device(256)
	require.NoError(b, err)
	big := pool.NewProfile("big")
	_, err = big.Device(1 << 20)
	require.NoError(b, err)
	for _, c := range []struct {
		name string
		n    int
		pr   *pool.Profile
		fit  bool
	}{{"fit-10000", 10_000, tiny, true}, {"fit-30000", 30_000, tiny, true}, {"fit-100000", 100_000, tiny, true}, {"too-many-2^20", 1 << 20, big, false}} {
		b.Run(c.name, func(b *testing.B) {
			// NewFake: NewFakeT's leak report walks the stack at every
			// handle made, which would be most of what is measured.
			f := cudarttest.NewFake(cudarttest.WithDeviceMemory(80 << 30))
			b.Cleanup(func() { require.NoError(b, f.CheckLeaks()) })
			layout := pool.SlotLayout{Profiles: []*pool.Profile{c.pr}}
			for b.Loop() {
				s, err := pool.NewSlots(f, c.n, layout, pool.WithHostBytes(0))
				if !c.fit {
					if !errors.Is(err, pool.ErrInvalidOption) {
						b.Fatalf("want ErrInvalidOption, got %v", err)
					}
					continue
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
