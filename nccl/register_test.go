package nccl_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/vmem"
)

// The fake registers a buffer that lies in one allocation only: NCCL 2.28
// shares the one cuMemCreate allocation that holds a buffer's start
// (cuMemGetAddressRange), so a buffer across two growths of a vmem arena
// would be shared in part. Each growth's part registers.
func TestRegisterRefusesABufferAcrossTwoAllocations(t *testing.T) {
	r := newRig(t, 2, 64)
	const g = 2 << 20 // the fake's granularity
	a, err := vmem.NewArena(r.fake, 0, 4*g)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	require.NoError(t, a.Ensure(g))
	require.NoError(t, a.Ensure(2*g))
	_, err = r.comms[0].Register(a.Base(), 2*g)
	require.ErrorIs(t, err, nccl.ErrInvalidArgument, "a buffer across both growths")
	assert.ErrorContains(t, err, "not inside one device allocation")
	for _, p := range []uint64{0, g} {
		reg, err := r.comms[0].Register(a.Base().Add(p), g)
		require.NoError(t, err, "the growth at %d", p)
		require.NoError(t, reg.Deregister())
	}
	assert.NoError(t, r.comms[0].AsyncError(), "a refused registration leaves the communicator well")
}
