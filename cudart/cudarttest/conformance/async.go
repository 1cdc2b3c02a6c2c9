package conformance

import (
	"bytes"
	"testing"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

func (s *suite) testAsync(t *testing.T, a cudart.AsyncAllocator) {
	t.Run("ReleaseThreshold", func(t *testing.T) {
		old, err := a.MemPoolReleaseThreshold(s.dev)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, a.SetMemPoolReleaseThreshold(s.dev, old)) })
		want := old + 4*mib
		require.NoError(t, a.SetMemPoolReleaseThreshold(s.dev, want))
		got, err := a.MemPoolReleaseThreshold(s.dev)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("MallocFree", func(t *testing.T) {
		const n = mib + 3
		p, err := a.MallocAsync(s.dev, n, 0)
		require.NoError(t, err)
		require.NotZero(t, p)
		freeNow := once(t, calls.FreeAsync, func() error {
			if err := a.FreeAsync(s.dev, p, 0); err != nil {
				return err
			}
			return s.rt.DeviceSynchronize(s.dev)
		})
		assert.True(t, align.Is(uint64(p), align.CUDA), "cudaMallocAsync = %s, not 256-byte aligned", p)
		require.NoError(t, s.rt.DeviceSynchronize(s.dev))
		want := pattern(70, n)
		s.write(t, p, want)
		assert.True(t, bytes.Equal(want, s.read(t, p, n)), "stream-ordered memory round trip changed the bytes")
		freeNow()
	})
}
