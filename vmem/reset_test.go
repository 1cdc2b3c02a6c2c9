package vmem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/vmem"
)

// TestArenaCloseAfterAResetFreesEverything: a reset leaves virtual memory
// alone, as CUDA does, so Close still unmaps and releases every growth and
// frees the address range, and the device's memory comes back.
func TestArenaCloseAfterAResetFreesEverything(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithGranularity(2<<20))
	before, _, err := f.MemGetInfo(0)
	require.NoError(t, err)
	a, err := vmem.NewArena(f, 0, 64<<20)
	require.NoError(t, err)
	require.NoError(t, a.Ensure(5<<20))
	require.NoError(t, a.Ensure(9<<20), "two growths")
	require.NoError(t, f.DeviceReset(0))
	during, _, err := f.MemGetInfo(0)
	require.NoError(t, err)
	assert.Less(t, during, before, "the reset kept the physical memory")
	f.ResetCalls()
	require.NoError(t, a.Close())
	assert.Equal(t, []string{"cuMemUnmap", "cuMemRelease", "cuMemUnmap", "cuMemRelease", "cuMemAddressFree"}, f.Calls())
	after, _, err := f.MemGetInfo(0)
	require.NoError(t, err)
	assert.Equal(t, before, after, "Close gave the memory back")
	require.NoError(t, a.Close(), "once")
}

// TestArenaCloseOnALostDeviceForgets: after a fatal fault and the reset,
// the device is lost and CUDA refuses every call, so Close forgets the
// arena, says so once, and returns nil after; the memory stays taken, as it
// does on a GPU until the process ends.
func TestArenaCloseOnALostDeviceForgets(t *testing.T) {
	f := cudarttest.NewFake(cudarttest.WithGranularity(2 << 20))
	a, err := vmem.NewArena(f, 0, 64<<20)
	require.NoError(t, err)
	require.NoError(t, a.Ensure(5<<20))
	require.NoError(t, f.FailAsync(0, cudart.ErrIllegalAddress.Code))
	require.NoError(t, f.Memset(0, a.Base(), 0, 256))
	require.ErrorIs(t, f.DeviceSynchronize(0), cudart.ErrIllegalAddress)
	require.NoError(t, f.DeviceReset(0))

	err = a.Close()
	require.ErrorIs(t, err, cudart.ErrDevicesUnavailable)
	assert.ErrorContains(t, err, "device 0 is lost")
	require.NoError(t, a.Close(), "said once")
	assert.ErrorIs(t, a.Ensure(1), vmem.ErrClosed)
	live := f.Live()
	assert.Equal(t, 1, live.Reservations, "forgotten, not freed")
	assert.Equal(t, 1, live.PhysAllocs, "forgotten, not freed")
}
