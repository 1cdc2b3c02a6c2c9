package pool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

func TestManagedArena(t *testing.T) {
	p, f := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithManagedBytes(16*mib))
	assert.Equal(t, uint64(16*mib), f.Live().ManagedBytes)
	b, err := p.WantManaged(3*mib, pool.Name("shared"))
	require.NoError(t, err)
	d, err := p.WantDevice(100)
	require.NoError(t, err)
	require.NoError(t, p.Satisfy())
	assert.Equal(t, pool.Managed, b.Arena())
	assert.Equal(t, 1, p.Stats().Managed.Placed)

	ptr, err := b.Ptr()
	require.NoError(t, err)
	require.NoError(t, f.Memset(0, ptr, 9, 3*mib))
	require.NoError(t, b.Prefetch(cudart.CPUDevice))
	_, ok := f.PrefetchedTo(ptr)
	require.False(t, ok, "the prefetch is queued on the default stream until a synchronisation")
	require.NoError(t, f.DeviceSynchronize(0))
	to, ok := f.PrefetchedTo(ptr)
	require.True(t, ok)
	assert.Equal(t, cudart.CPUDevice, to)
	require.NoError(t, b.Prefetch(0))
	require.NoError(t, f.StreamSynchronize(0, 0))
	to, _ = f.PrefetchedTo(ptr)
	assert.Equal(t, 0, to)

	assert.ErrorIs(t, d.Prefetch(0), pool.ErrWrongArena)
	_, err = b.Bytes()
	assert.ErrorIs(t, err, pool.ErrWrongArena, "managed memory is reached through its device address")
	require.NoError(t, p.ReleaseAll())
	assert.ErrorIs(t, b.Prefetch(0), pool.ErrReleased)
}

func TestManagedArenaNeverLargerThanFreeMemory(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDeviceMemory(64*mib))
	_, err := pool.New(f, pool.WithDeviceBytes(32*mib), pool.WithHostBytes(0), pool.WithManagedBytes(48*mib))
	require.ErrorIs(t, err, pool.ErrInvalidOption)
	assert.ErrorContains(t, err, "more than device 0 has free (32 MiB of 64 MiB)")
	assert.Zero(t, f.Live().DeviceAllocs, "the device arena taken first is freed")
}

func TestManagedNeedsTheAbility(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	_, err := pool.New(runtimeOnly{f}, pool.WithHostBytes(0), pool.WithManagedBytes(mib))
	assert.ErrorIs(t, err, pool.ErrInvalidOption)
	assert.ErrorContains(t, err, "cudart.Managed")
}

func TestMallocHeap(t *testing.T) {
	p, f := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithMallocHeap(64*mib))
	assert.Equal(t, uint64(64*mib), p.MallocHeap())
	got, err := f.DeviceGetLimit(0, cudart.LimitMallocHeapSize)
	require.NoError(t, err)
	assert.Equal(t, uint64(64*mib), got)

	q, _ := newPool(t, pool.WithDeviceBytes(mib), pool.WithHostBytes(0))
	assert.Zero(t, q.MallocHeap())

	g := cudarttest.NewFakeT(t)
	require.NoError(t, g.FailCall("cudaDeviceSetLimit", 36))
	_, err = pool.New(g, pool.WithDeviceBytes(mib), pool.WithHostBytes(0), pool.WithMallocHeap(64*mib))
	require.Error(t, err)
	assert.ErrorContains(t, err, "cannot change once a kernel using malloc is loaded")
}
