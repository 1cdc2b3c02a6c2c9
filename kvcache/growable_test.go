package kvcache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// TestFreeFractionOfAGrowableArena: on a growable arena the fraction is of
// the device's free memory after the model's buffers, not of the address
// space (64 GiB here, on a device of 256 MiB): the pages are mapped at New
// and the rest of the device's memory stays free.
func TestFreeFractionOfAGrowableArena(t *testing.T) {
	const mem, weights = 256 << 20, 16 << 20
	for _, f := range []float64{0.5, 0.9} {
		rt := cudarttest.NewFakeT(t, cudarttest.WithDeviceMemory(mem))
		p, err := pool.New(rt, pool.WithGrowableDevice(64<<30), pool.WithHostBytes(0))
		require.NoError(t, err)
		_, err = p.WantDevice(weights, pool.Name("weights"))
		require.NoError(t, err)
		free, _, err := rt.MemGetInfo(0)
		require.NoError(t, err)
		c, err := New(rt, p, small, WithFreeFraction(f))
		require.NoError(t, err, "fraction %v", f)
		got := uint64(c.Pages()) * c.PageStride()
		want := f * float64(free-weights)
		assert.InDelta(t, want, float64(got), float64(c.PageStride()), "fraction %v of the %d B free after the weights", f, free-weights)
		after, _, err := rt.MemGetInfo(0)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, float64(after), (1-f)*float64(free-weights)-2<<20, "the rest stays free, but for a granule's rounding")
		require.NoError(t, p.Close())
	}
}
