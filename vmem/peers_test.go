package vmem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/vmem"
)

// TestPlaceOnTwoGPUsAndCopyThroughPeerAccess places an arena on each of two
// devices, each open to the other, and copies device 0's data to device 1
// with a copy issued on device 1, which reads device 0's memory directly.
func TestPlaceOnTwoGPUsAndCopyThroughPeerAccess(t *testing.T) {
	forEachRuntime(t, 2, func(t *testing.T, rt cudart.Full, gran uint64) {
		n := 4 * gran
		a0, err := vmem.NewArena(rt, 0, 16*gran, vmem.WithPeers(1))
		require.NoError(t, err)
		defer func() { require.NoError(t, a0.Close()) }()
		a1, err := vmem.NewArena(rt, 1, 16*gran, vmem.WithPeers(0))
		require.NoError(t, err)
		defer func() { require.NoError(t, a1.Close()) }()
		require.NoError(t, a0.Ensure(n))
		require.NoError(t, a1.Ensure(n))

		data := pattern(0x5a, n)
		put(t, rt, 0, a0.Base(), data, n)
		require.NoError(t, rt.Memcpy(1, cudart.DeviceMem(a1.Base(), n), cudart.DeviceMem(a0.Base(), n), cudart.DeviceToDevice))
		require.NoError(t, rt.DeviceSynchronize(1))
		assert.Equal(t, data, get(t, rt, 1, a1.Base(), n, n), "device 1 holds device 0's data")
		assert.Equal(t, data, get(t, rt, 0, a1.Base(), n, n), "and device 0 reads it there too")
	})
}

// TestVectorMoveKeepsPeerAccess moves a vector open to a peer and reads it
// from the peer at its new address.
func TestVectorMoveKeepsPeerAccess(t *testing.T) {
	forEachRuntime(t, 2, func(t *testing.T, rt cudart.Full, gran uint64) {
		v, err := vmem.NewVector(rt, 0, vmem.WithPeers(1))
		require.NoError(t, err)
		defer func() { require.NoError(t, v.Close()) }()
		require.NoError(t, v.Grow(2*gran))
		data := pattern(6, 2*gran)
		put(t, rt, 0, v.Ptr(), data, gran)
		defer growMoved(t, rt, v, gran, 4*gran)()
		assert.Equal(t, data, get(t, rt, 1, v.Ptr(), 2*gran, gran), "the peer reads the moved memory")
	})
}

func TestWithoutPeersOnlyTheOwnerHasAccess(t *testing.T) {
	f := newFake(t, cudarttest.WithDevices(2), cudarttest.WithPeerAccess(0, 1))
	a, err := vmem.NewArena(f, 0, 4*g)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	require.NoError(t, a.Ensure(g))
	buf := make([]byte, g)
	err = f.Memcpy(1, cudart.HostMem(buf), cudart.DeviceMem(a.Base(), g), cudart.DeviceToHost)
	assert.ErrorIs(t, err, cudart.ErrIllegalAddress, "device 1 was never given access")
	assert.NoError(t, f.Memcpy(0, cudart.HostMem(buf), cudart.DeviceMem(a.Base(), g), cudart.DeviceToHost))
}

func TestPeerAccessIsOneCallAndSurvivesAMove(t *testing.T) {
	f := newFake(t, cudarttest.WithDevices(3), cudarttest.WithPeerAccess(0, 1), cudarttest.WithPeerAccess(0, 2), cudarttest.WithPeerAccess(1, 2))
	v, err := vmem.NewVector(f, 0, vmem.WithPeers(2, 1, 2, 0))
	require.NoError(t, err)
	defer func() { require.NoError(t, v.Close()) }()
	f.ResetCalls()
	require.NoError(t, v.Grow(2*g))
	assert.Equal(t, 1, count(f.Calls(), "cuMemSetAccess"), "owner and peers in one call")
	data := pattern(3, 2*g)
	put(t, f, 2, v.Ptr(), data, g)

	unblock := block(t, f, v)
	defer unblock()
	old := v.Ptr()
	f.ResetCalls()
	require.NoError(t, v.Grow(4*g))
	require.NotEqual(t, old, v.Ptr(), "the vector moved")
	assert.Equal(t, 2, count(f.Calls(), "cuMemSetAccess"), "one for the memory moved, one for the growth")
	for d := range 3 {
		assert.Equal(t, data, get(t, f, d, v.Ptr(), 2*g, g), "device %d reads the moved memory", d)
	}
}

func TestAPeerCUDARefusesFailsTheGrowthCleanly(t *testing.T) {
	f := newFake(t, cudarttest.WithDevices(2), cudarttest.WithPeerAccess(0, 1))
	a, err := vmem.NewArena(f, 0, 4*g, vmem.WithPeers(5))
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	err = a.Ensure(g)
	assert.ErrorIs(t, err, cudart.ErrInvalidDevice)
	assert.Zero(t, a.Mapped())
	assert.Zero(t, f.Live().PhysAllocs)
}

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}
