package cudarttest_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

func TestHostRegisterOverlapsAndUnregisterMismatches(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	buf := make([]byte, 16*kib)
	require.NoError(t, f.HostRegister(0, buf[4*kib:8*kib], cudart.HostRegisterDefault))
	t.Cleanup(func() { assert.NoError(t, f.HostUnregister(0, buf[4*kib:8*kib])) })
	pinned, err := f.MallocHost(0, 4*kib)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.FreeHost(pinned)) })

	for name, b := range map[string][]byte{
		"same":           buf[4*kib : 8*kib],
		"overlap before": buf[:4*kib+1],
		"overlap after":  buf[8*kib-1:],
		"contains":       buf,
		"pinned memory":  pinned,
	} {
		assert.ErrorIs(t, f.HostRegister(0, b, cudart.HostRegisterDefault), cudart.ErrHostMemoryAlreadyRegistered, name)
	}
	require.NoError(t, f.HostRegister(0, buf[:4*kib], cudart.HostRegisterPortable), "adjacent is fine")
	flags, ok := f.HostRegisterFlags(buf[100:])
	assert.True(t, ok)
	assert.Equal(t, cudart.HostRegisterPortable, flags)
	require.NoError(t, f.HostUnregister(0, buf[:4*kib]))

	for name, b := range map[string][]byte{
		"never registered": buf[12*kib:],
		"interior":         buf[5*kib : 6*kib],
		"pinned memory":    pinned,
	} {
		assert.ErrorIs(t, f.HostUnregister(0, b), cudart.ErrHostMemoryNotRegistered, name)
	}
	assert.ErrorIs(t, f.HostRegister(0, nil, 0), cudart.ErrInvalidValue, "empty range")
}

func TestMappedHostMemoryAliases(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	const n = 8 * kib
	p, err := f.HostAlloc(0, n, cudart.HostAllocMapped|cudart.HostAllocWriteCombined)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.FreeHost(p)) })
	flags, ok := f.HostAllocFlags(p)
	require.True(t, ok)
	assert.Equal(t, cudart.HostAllocMapped|cudart.HostAllocWriteCombined, flags)
	dp, err := f.HostGetDevicePointer(0, p)
	require.NoError(t, err)
	inner, err := f.HostGetDevicePointer(0, p[100:])
	require.NoError(t, err)
	assert.Equal(t, dp.Add(100), inner, "an interior pointer maps to the same offset")

	require.NoError(t, f.Memset(0, dp.Add(10), 0xee, 5))
	assert.Equal(t, []byte{0, 0xee, 0xee, 0xee, 0xee, 0xee, 0}, p[9:16])
	require.ErrorIs(t, f.Memset(0, dp, 1, n+1), cudart.ErrInvalidValue, "bounded by the host allocation")

	plain, err := f.MallocHost(0, n)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.FreeHost(plain)) })
	_, err = f.HostGetDevicePointer(0, plain)
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "unmapped memory has no device pointer")
	u := f.Live()
	assert.Equal(t, 2, u.HostAllocs)
	assert.Equal(t, 1, u.MappedHostAllocs)
}

func TestHostMemoryLimit(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithHostMemory(mib))
	p, err := f.MallocHost(0, mib)
	require.NoError(t, err)
	_, err = f.HostAlloc(0, 1, cudart.HostAllocDefault)
	assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	assert.ErrorContains(t, err, "cudaHostAlloc(1 B, cudaHostAllocDefault)")
	require.NoError(t, f.FreeHost(p))
	z, err := f.MallocHost(0, 0)
	assert.NoError(t, err)
	assert.Nil(t, z)
}
