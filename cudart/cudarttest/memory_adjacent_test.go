package cudarttest_test

import (
	"bytes"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// TestCopyAcrossAdjacentReservations: CUDA addresses reservations that follow
// each other as one range (checked on an H200 by vmem's
// TestVectorCopiesAcrossReservationsOnCUDA); the fake must too, and must
// still refuse a range that runs into unmapped or unreserved space.
func TestCopyAcrossAdjacentReservations(t *testing.T) {
	const g = 2 << 20
	f := cudarttest.NewFakeT(t, cudarttest.WithGranularity(g))
	a, err := f.MemAddressReserve(g, g, 0)
	require.NoError(t, err)
	b, err := f.MemAddressReserve(g, g, a.Add(g))
	require.NoError(t, err)
	require.Equal(t, a.Add(g), b, "the fake honours a free hint")
	var hs []cudart.PhysHandle
	for _, va := range []cudart.DevicePtr{a, b} {
		h, err := f.MemCreate(0, g)
		require.NoError(t, err)
		hs = append(hs, h)
		require.NoError(t, f.MemMap(va, g, 0, h))
		require.NoError(t, f.MemSetAccess(va, g, []int{0}))
	}
	src := bytes.Repeat([]byte{1, 2, 3, 4}, g/2)
	require.NoError(t, f.Memcpy(0, cudart.DeviceMem(a, 2*g), cudart.HostMem(src), cudart.HostToDevice))
	got := make([]byte, 2*g)
	require.NoError(t, f.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(a, 2*g), cudart.DeviceToHost))
	assert.Equal(t, src, got)

	err = f.Memset(0, b, 0, g+1)
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "past the last reservation")

	for i, va := range []cudart.DevicePtr{a, b} {
		require.NoError(t, f.MemUnmap(va, g))
		require.NoError(t, f.MemRelease(hs[i]))
		require.NoError(t, f.MemAddressFree(va, g))
	}
}
