package vmem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/vmem"
)

// TestArenaCloseAfterAResetFreesTheReservationOnly: the reset released the
// physical memory, so Close unmaps and releases nothing and frees the
// address range, which outlives the reset.
func TestArenaCloseAfterAResetFreesTheReservationOnly(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithGranularity(2<<20))
	a, err := vmem.NewArena(f, 0, 64<<20)
	require.NoError(t, err)
	require.NoError(t, a.Ensure(5<<20))
	require.NoError(t, a.Ensure(9<<20), "two growths")
	require.NoError(t, f.DeviceReset(0))
	f.ResetCalls()
	require.NoError(t, a.Close())
	assert.Equal(t, []string{"cuMemAddressFree"}, f.Calls())
	require.NoError(t, a.Close(), "once")
}
