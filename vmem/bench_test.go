package vmem_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/vmem"
)

// Doubling growth from benchFrom to benchTo, as in NVIDIA's post.
const (
	benchFrom = 2 << 20
	benchTo   = 1 << 30
)

// benchRuntimes runs fn on the fake (2 MiB granularity, as on a GPU) and on
// CUDA where present.
func benchRuntimes(b *testing.B, fn func(b *testing.B, rt cudart.Full)) {
	b.Run("fake", func(b *testing.B) { fn(b, cudarttest.NewFake()) })
	b.Run("cuda", func(b *testing.B) { fn(b, openCUDA(b, 1)) })
}

// growDoubling grows to each size from benchFrom to benchTo, doubling, then
// releases, untimed.
func growDoubling(b *testing.B, grow func(size uint64) error, release func() error) {
	for n := uint64(benchFrom); n <= benchTo; n *= 2 {
		if err := grow(n); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := release(); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}

// BenchmarkVectorGrowDoubling times a Vector grown by doubling from 2 MiB to
// 1 GiB; Close is not timed.
func BenchmarkVectorGrowDoubling(b *testing.B) {
	benchRuntimes(b, func(b *testing.B, rt cudart.Full) {
		for b.Loop() {
			v, err := vmem.NewVector(rt, 0)
			if err != nil {
				b.Fatal(err)
			}
			growDoubling(b, v.Grow, v.Close)
		}
	})
}

// BenchmarkChunkPolicy compares two ways to map 1 GiB into a range reserved
// up front: one cuMemCreate of the whole delta per doubling growth from
// 2 MiB (what Arena and Vector do), and one cuMemCreate, cuMemMap and
// cuMemSetAccess per granule. Close is not timed.
func BenchmarkChunkPolicy(b *testing.B) {
	b.Run("per-growth", func(b *testing.B) {
		benchRuntimes(b, func(b *testing.B, rt cudart.Full) {
			for b.Loop() {
				a, err := vmem.NewArena(rt, 0, benchTo)
				if err != nil {
					b.Fatal(err)
				}
				growDoubling(b, a.Ensure, a.Close)
			}
		})
	})
	b.Run("per-granule", func(b *testing.B) {
		benchRuntimes(b, func(b *testing.B, rt cudart.Full) {
			gran, err := rt.MemGetAllocationGranularity(0, true)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				base, err := rt.MemAddressReserve(benchTo, gran, 0)
				if err != nil {
					b.Fatal(err)
				}
				var hs []cudart.PhysHandle
				for off := uint64(0); off < benchTo; off += gran {
					h, err := rt.MemCreate(0, gran)
					if err != nil {
						b.Fatal(err)
					}
					hs = append(hs, h)
					if err := rt.MemMap(base.Add(off), gran, 0, h); err != nil {
						b.Fatal(err)
					}
					if err := rt.MemSetAccess(base.Add(off), gran, []int{0}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				for i, h := range hs {
					if err := rt.MemUnmap(base.Add(uint64(i)*gran), gran); err != nil {
						b.Fatal(err)
					}
					if err := rt.MemRelease(h); err != nil {
						b.Fatal(err)
					}
				}
				if err := rt.MemAddressFree(base, benchTo); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	})
}
