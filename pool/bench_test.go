package pool_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// benchSizes are 10,000 mixed sizes, the same every run.
func benchSizes() []uint64 {
	sizes := make([]uint64, 10000)
	x := uint64(88172645463325252)
	for i := range sizes {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		sizes[i] = 256 + x%(64<<10)
	}
	return sizes
}

// BenchmarkWantSatisfy measures WantDevice for 10,000 buffers, one Satisfy
// placing them all, and the ReleaseAll that ends the cycle; ns/buffer and
// allocs/buffer are per buffer.
func BenchmarkWantSatisfy(b *testing.B) {
	f := cudarttest.NewFake()
	p, err := pool.New(f, pool.WithDeviceBytes(4<<30), pool.WithHostBytes(0))
	require.NoError(b, err)
	defer p.Close()
	sizes := benchSizes()
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		for _, s := range sizes {
			if _, err := p.WantDevice(s); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.Satisfy(); err != nil {
			b.Fatal(err)
		}
		if err := p.ReleaseAll(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	n := float64(b.N * len(sizes))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/buffer")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/buffer")
}
