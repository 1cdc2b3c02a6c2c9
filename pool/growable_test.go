package pool_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

func TestGrowableArenaMapsOnDemandAndNeverMoves(t *testing.T) {
	p, f := newPool(t, pool.WithGrowableDevice(gib), pool.WithHostBytes(0))
	st := p.Stats().Device
	assert.Equal(t, uint64(gib), st.Capacity)
	assert.Zero(t, st.Mapped, "reserving address space maps nothing")
	assert.Zero(t, f.Live().PhysBytes)

	a, err := p.WantDevice(3 * mib)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	assert.Equal(t, uint64(4*mib), p.Stats().Device.Mapped, "whole 2 MiB granules")
	pa, err := a.Ptr()
	require.NoError(t, err)
	pattern := bytes.Repeat([]byte{0xab}, 3*mib)
	require.NoError(t, f.Memcpy(0, cudart.DeviceMem(pa, 3*mib), cudart.HostMem(pattern), cudart.HostToDevice))

	b, err := p.WantDevice(100 * mib)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	assert.GreaterOrEqual(t, p.Stats().Device.Mapped, b.Offset()+100*mib)
	pa2, err := a.Ptr()
	require.NoError(t, err)
	assert.Equal(t, pa, pa2, "growth never moves a placed buffer")
	got := make([]byte, 3*mib)
	require.NoError(t, f.Memcpy(0, cudart.HostMem(got), cudart.DeviceMem(pa, 3*mib), cudart.DeviceToHost))
	assert.Equal(t, pattern, got)
	pb, err := b.Ptr()
	require.NoError(t, err)
	require.NoError(t, f.Memset(0, pb, 1, 100*mib), "the grown part is accessible")

	mapped := p.Stats().Device.Mapped
	require.NoError(t, p.ReleaseAll())
	assert.Equal(t, mapped, p.Stats().Device.Mapped, "ReleaseAll keeps the mapping for reuse")
	_, err = p.WantDevice(50 * mib)
	require.NoError(t, err)
	f.ResetCalls()
	require.NoError(t, p.Satisfy())
	assert.Empty(t, f.Calls(), "a plan that fits in what is mapped maps nothing")
}

func TestGrowableArenaTrimOnRelease(t *testing.T) {
	p, f := newPool(t, pool.WithGrowableDevice(gib), pool.WithHostBytes(0), pool.WithTrimOnRelease())
	_, err := p.WantDevice(10 * mib)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	require.NotZero(t, f.Live().PhysBytes)
	require.NoError(t, p.ReleaseAll())
	assert.Zero(t, p.Stats().Device.Mapped)
	assert.Zero(t, f.Live().PhysBytes)
}

func TestGrowableArenaExhaustion(t *testing.T) {
	p, _ := newPool(t, pool.WithGrowableDevice(8*mib), pool.WithHostBytes(0))
	_, err := p.WantDevice(5*mib, pool.Name("a"))
	require.NoError(t, err)
	_, err = p.WantDevice(5*mib, pool.Name("b"))
	require.NoError(t, err)
	err = p.Satisfy()
	var ex *pool.ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, uint64(8*mib), ex.Have)
	assert.Zero(t, p.Stats().Device.Mapped, "nothing mapped for a plan that does not fit")
}

// TestGrowthFaultSweep fails each CUDA call a growth makes in turn: Satisfy
// reports it, places nothing, maps nothing more, and a retry succeeds.
func TestGrowthFaultSweep(t *testing.T) {
	probe := cudarttest.NewFake()
	pp, err := pool.New(probe, pool.WithGrowableDevice(gib), pool.WithHostBytes(0))
	require.NoError(t, err)
	_, err = pp.WantDevice(mib)
	require.NoError(t, err)
	require.NoError(t, pp.Satisfy())
	_, err = pp.WantDevice(20 * mib)
	require.NoError(t, err)
	probe.ResetCalls()
	require.NoError(t, pp.Satisfy())
	calls := probe.Calls()
	require.NoError(t, pp.Close())
	require.NotEmpty(t, calls)

	for i, name := range calls {
		t.Run(name, func(t *testing.T) {
			p, f := newPool(t, pool.WithGrowableDevice(gib), pool.WithHostBytes(0))
			first, err := p.WantDevice(mib)
			require.NoError(t, err)
			require.NoError(t, p.Satisfy())
			before, live := p.Stats().Device, f.Live()

			b, err := p.WantDevice(20 * mib)
			require.NoError(t, err)
			require.NoError(t, f.FailNth(i+1, 2))
			err = p.Satisfy()
			require.Error(t, err)
			assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
			_, err = b.Ptr()
			assert.ErrorIs(t, err, pool.ErrNotPlaced)
			assert.Equal(t, before.Mapped, p.Stats().Device.Mapped)
			assert.Equal(t, live, f.Live(), "a failed growth leaves nothing behind")
			_, err = first.Ptr()
			require.NoError(t, err)

			f.ClearFaults()
			require.NoError(t, p.Satisfy())
			_, err = b.Ptr()
			assert.NoError(t, err)
		})
	}
}

// runtimeOnly hides every optional ability of the fake.
type runtimeOnly struct{ cudart.Runtime }

func TestGrowableNeedsVirtualMemory(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	_, err := pool.New(runtimeOnly{f}, pool.WithHostBytes(0), pool.WithGrowableDevice(gib))
	assert.ErrorIs(t, err, pool.ErrInvalidOption)
	assert.ErrorContains(t, err, "cudart.VirtualMemory")
	_, err = pool.New(f, pool.WithHostBytes(0), pool.WithPeerAccess(1))
	assert.ErrorIs(t, err, pool.ErrInvalidOption)
}

func TestGrowablePeerAccess(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2), cudarttest.WithPeerAccess(0, 1))
	p, err := pool.New(f, pool.WithDevice(0), pool.WithGrowableDevice(gib), pool.WithHostBytes(0), pool.WithPeerAccess(1))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	b, err := p.WantDevice(mib)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	ptr, err := b.Ptr()
	require.NoError(t, err)
	require.NoError(t, f.Memset(1, ptr, 7, mib), "device 1 may write the arena")
}
