package cudarttest_test

import (
	"math"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

const g = 2 * mib // the fake's default granularity

// mapped is size bytes of physical memory on device 0, its first granule
// mapped at the start of a reservation of reserve bytes; the mapping, the
// reservation and the memory go at cleanup.
func mapped(t *testing.T, f *cudarttest.Fake, size, reserve uint64) (cudart.PhysHandle, cudart.DevicePtr) {
	t.Helper()
	h, err := f.MemCreate(0, size)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.MemRelease(h)) })
	va, err := f.MemAddressReserve(reserve, 0, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.MemAddressFree(va, reserve)) })
	require.NoError(t, f.MemMap(va, g, 0, h))
	t.Cleanup(func() { assert.NoError(t, f.MemUnmap(va, g)) })
	return h, va
}

func TestGranularityOption(t *testing.T) {
	f := cudarttest.NewFake(cudarttest.WithGranularity(64 * kib))
	for _, rec := range []bool{false, true} {
		got, err := f.MemGetAllocationGranularity(0, rec)
		require.NoError(t, err)
		assert.Equal(t, uint64(64*kib), got)
	}
}

func TestVirtualMemoryArgumentsAreChecked(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	h, va := mapped(t, f, 2*g, 4*g)

	tests := []struct {
		name string
		call func() error
	}{
		{"MemCreate of a partial granule", func() error { _, err := f.MemCreate(0, g+1); return err }},
		{"MemCreate of nothing", func() error { _, err := f.MemCreate(0, 0); return err }},
		{"reserve a partial granule", func() error { _, err := f.MemAddressReserve(g/2, 0, 0); return err }},
		{"reserve with odd alignment", func() error { _, err := f.MemAddressReserve(g, 3*g, 0); return err }},
		{"map at an unaligned address", func() error { return f.MemMap(va.Add(4*kib), g, 0, h) }},
		{"map a partial granule", func() error { return f.MemMap(va.Add(g), g/2, 0, h) }},
		{"map at an unaligned offset", func() error { return f.MemMap(va.Add(g), g, 4*kib, h) }},
		{"map past the handle", func() error { return f.MemMap(va.Add(g), 2*g, g, h) }},
		{"map over a mapping", func() error { return f.MemMap(va, g, g, h) }},
		{"map past the reservation", func() error { return f.MemMap(va.Add(3*g), 2*g, 0, h) }},
		{"map outside any reservation", func() error { return f.MemMap(0x1000_0000_0000, g, 0, h) }},
		{"map an unknown handle", func() error { return f.MemMap(va.Add(g), g, 0, 999) }},
		{"unmap part of a mapping", func() error { return f.MemUnmap(va, g/2) }},
		{"unmap what is not mapped", func() error { return f.MemUnmap(va.Add(g), g) }},
		{"set access on unmapped memory", func() error { return f.MemSetAccess(va, 2*g, []int{0}) }},
		{"set access for no device", func() error { return f.MemSetAccess(va, g, nil) }},
		{"free part of a reservation", func() error { return f.MemAddressFree(va, 2*g) }},
		{"free a mapped reservation", func() error { return f.MemAddressFree(va, 4*g) }},
		{"release an unknown handle", func() error { return f.MemRelease(12345) }},
	}
	before := f.Live()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.call(), cudart.ErrInvalidValue)
			assert.Equal(t, before, f.Live())
		})
	}
	assert.ErrorIs(t, f.MemSetAccess(va, g, []int{1}), cudart.ErrInvalidDevice)
	_, err := f.MemAddressReserve(1<<60, 0, 0)
	assert.ErrorIs(t, err, cudart.ErrMemoryAllocation, "more than a GPU's address space")
	assert.Equal(t, before, f.Live())
}

func TestMappedMemoryNeedsAccess(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2), cudarttest.WithPeerAccess(0, 1))
	h, err := f.MemCreate(0, g)
	require.NoError(t, err)
	va, err := f.MemAddressReserve(2*g, 0, 0)
	require.NoError(t, err)
	require.NoError(t, f.MemMap(va, g, 0, h))

	err = f.Memset(0, va, 1, 16)
	assert.ErrorIs(t, err, cudart.ErrIllegalAddress, "access never set")
	assert.ErrorContains(t, err, "cuMemSetAccess")
	require.NoError(t, f.MemSetAccess(va, g, []int{1}))
	assert.ErrorIs(t, f.Memset(0, va, 1, 16), cudart.ErrIllegalAddress, "access set for another device only")
	require.NoError(t, f.MemSetAccess(va, g, []int{0, 1}))
	assert.NoError(t, f.Memset(0, va, 1, 16))
	require.NoError(t, f.DeviceSynchronize(0), "the memset runs before the unmap")
	err = f.Memset(0, va.Add(g-8), 1, 16)
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "runs into the unmapped rest of the reservation")
	assert.ErrorContains(t, err, "not mapped")

	require.NoError(t, f.MemUnmap(va, g))
	require.NoError(t, f.MemMap(va, g, 0, h))
	assert.ErrorIs(t, f.Memset(0, va, 1, 16), cudart.ErrIllegalAddress, "a new mapping starts with no access")
	require.NoError(t, f.MemUnmap(va, g))
	require.NoError(t, f.MemRelease(h))
	require.NoError(t, f.MemAddressFree(va, 2*g))
}

func TestPhysicalMemoryIsFreedWhenReleasedAndUnmapped(t *testing.T) {
	for _, releaseFirst := range []bool{true, false} {
		f := cudarttest.NewFakeT(t)
		free0, _, err := f.MemGetInfo(0)
		require.NoError(t, err)
		h, err := f.MemCreate(0, g)
		require.NoError(t, err)
		va, err := f.MemAddressReserve(2*g, 0, 0)
		require.NoError(t, err)
		require.NoError(t, f.MemMap(va, g, 0, h))
		require.NoError(t, f.MemMap(va.Add(g), g, 0, h))
		require.NoError(t, f.MemSetAccess(va, 2*g, []int{0}))
		require.NoError(t, f.Memset(0, va, 0x42, 8))
		b := make([]byte, 8)
		require.NoError(t, f.Memcpy(0, cudart.HostMem(b), cudart.DeviceMem(va.Add(g), 8), cudart.DeviceToHost))
		assert.Equal(t, []byte{0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42}, b, "two mappings of one handle alias")

		steps := []func() error{
			func() error { return f.MemUnmap(va, g) },
			func() error { return f.MemUnmap(va.Add(g), g) },
		}
		if releaseFirst {
			steps = append([]func() error{func() error { return f.MemRelease(h) }}, steps...)
		} else {
			steps = append(steps, func() error { return f.MemRelease(h) })
		}
		for i, step := range steps {
			free, _, err := f.MemGetInfo(0)
			require.NoError(t, err)
			assert.Equal(t, free0-g, free, "step %d (release first %t): still charged", i, releaseFirst)
			assert.Equal(t, 1, f.Live().PhysAllocs)
			require.NoError(t, step())
		}
		free, _, err := f.MemGetInfo(0)
		require.NoError(t, err)
		assert.Equal(t, free0, free, "released and unmapped: freed")
		assert.Zero(t, f.Live().PhysAllocs)
		assert.ErrorIs(t, f.MemRelease(h), cudart.ErrInvalidValue, "released twice")
		require.NoError(t, f.MemAddressFree(va, 2*g))
	}
}

func TestReleasedHandleCannotBeMapped(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	h, err := f.MemCreate(0, g)
	require.NoError(t, err)
	va, err := f.MemAddressReserve(g, 0, 0)
	require.NoError(t, err)
	require.NoError(t, f.MemRelease(h))
	assert.ErrorIs(t, f.MemMap(va, g, 0, h), cudart.ErrInvalidValue)
	require.NoError(t, f.MemAddressFree(va, g))
}

func TestReserveHint(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	va, err := f.MemAddressReserve(2*g, 0, 0)
	require.NoError(t, err)
	next, err := f.MemAddressReserve(g, 0, va.Add(2*g))
	require.NoError(t, err)
	assert.Equal(t, va.Add(2*g), next, "a free hint is honoured exactly")

	taken, err := f.MemAddressReserve(g, 0, va.Add(g))
	require.NoError(t, err)
	assert.NotEqual(t, va.Add(g), taken, "an occupied hint is not")
	assert.True(t, taken >= next.Add(g) || taken.Add(g) <= va, "and the range goes where nothing is")

	unaligned, err := f.MemAddressReserve(g, 0, next.Add(g+4*kib))
	require.NoError(t, err)
	assert.NotEqual(t, next.Add(g+4*kib), unaligned, "an unaligned hint is not honoured")

	m, err := f.Malloc(0, 256)
	require.NoError(t, err)
	assert.Greater(t, m, unaligned, "later allocations go past honoured hints")
	require.NoError(t, f.Free(0, m))
	for _, r := range []struct {
		p cudart.DevicePtr
		n uint64
	}{{va, 2 * g}, {next, g}, {taken, g}, {unaligned, g}} {
		require.NoError(t, f.MemAddressFree(r.p, r.n))
	}
}

// TestReserveHintPastTheSpace: the fake honours a hint only inside the 2^48
// bytes above its first address (2^45); a hinted range that ends past them
// is refused, as CUDA refuses one ending at 2^64, so a hint near 2^64 wraps
// nothing and every later address stays above 2^45.
func TestReserveHintPastTheSpace(t *testing.T) {
	const floor, top = 1 << 45, 1<<45 + 1<<48
	f := cudarttest.NewFakeT(t)
	for _, hint := range []uint64{math.MaxUint64 - 2*g + 1, math.MaxUint64 - 4*g + 1, top - g, top} {
		_, err := f.MemAddressReserve(2*g, 0, cudart.DevicePtr(hint))
		require.ErrorIs(t, err, cudart.ErrMemoryAllocation, "hint %#x is past the space", hint)
	}
	below, err := f.MemAddressReserve(2*g, 0, cudart.DevicePtr(g))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, uint64(below), uint64(floor), "a hint below the space goes elsewhere")
	require.NoError(t, f.MemAddressFree(below, 2*g))
	p, err := f.MemAddressReserve(2*g, 0, cudart.DevicePtr(top-2*g))
	require.NoError(t, err)
	assert.Equal(t, cudart.DevicePtr(top-2*g), p, "a hint that ends where the space does is honoured")
	for range 2 {
		m, err := f.Malloc(0, 4*mib)
		require.NoError(t, err)
		assert.True(t, m >= floor && m <= ^cudart.DevicePtr(0)-4*mib, "cudaMalloc at %s: above 2^45, below 2^64", m)
		require.NoError(t, f.Free(0, m))
	}
	require.NoError(t, f.MemAddressFree(p, 2*g))
}

func TestGrowInPlaceCopiesAcrossMappings(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	va, err := f.MemAddressReserve(3*g, 0, 0)
	require.NoError(t, err)
	var hs []cudart.PhysHandle
	for i := range uint64(3) {
		h, err := f.MemCreate(0, g)
		require.NoError(t, err)
		require.NoError(t, f.MemMap(va.Add(i*g), g, 0, h))
		require.NoError(t, f.MemSetAccess(va.Add(i*g), g, []int{0}))
		hs = append(hs, h)
	}
	in := make([]byte, 2*g+10)
	for i := range in {
		in[i] = byte(i * 7)
	}
	require.NoError(t, f.Memcpy(0, cudart.DeviceMem(va.Add(g/2), uint64(len(in))), cudart.HostMem(in), cudart.HostToDevice))
	out := make([]byte, len(in))
	require.NoError(t, f.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(va.Add(g/2), uint64(len(out))), cudart.DeviceToHost))
	assert.Equal(t, in, out)
	require.NoError(t, f.MemUnmap(va, 3*g), "one unmap of several whole mappings")
	for _, h := range hs {
		require.NoError(t, f.MemRelease(h))
	}
	require.NoError(t, f.MemAddressFree(va, 3*g))
}

// Memory exportable as a POSIX file descriptor is made as any other, at the
// same granularity, and the fake records how it exports: a leak report
// says so. The types a Linux host without fabric handles lacks are refused.
func TestExportableMemory(t *testing.T) {
	f := cudarttest.NewFake(cudarttest.WithGranularity(64 * kib))
	for _, rec := range []bool{false, true} {
		got, err := f.MemGetExportableGranularity(0, cudart.HandleTypePOSIXFileDescriptor, rec)
		require.NoError(t, err)
		assert.Equal(t, uint64(64*kib), got)
	}
	h, err := f.MemCreateExportable(0, 128*kib, cudart.HandleTypePOSIXFileDescriptor)
	require.NoError(t, err)
	assert.ErrorContains(t, f.CheckLeaks(), "exportable as CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR")
	require.NoError(t, f.MemRelease(h))
	require.NoError(t, f.CheckLeaks())

	for _, tt := range []struct {
		name  string
		types cudart.HandleType
		size  uint64
		want  error
	}{
		{"a partial granule", cudart.HandleTypePOSIXFileDescriptor, 64*kib + 1, cudart.ErrInvalidValue},
		{"a Win32 handle", 0x2, 64 * kib, cudart.ErrNotSupported},
		{"a Win32 KMT handle", cudart.HandleTypePOSIXFileDescriptor | 0x4, 64 * kib, cudart.ErrNotSupported},
		{"a fabric handle", 0x8, 64 * kib, cudart.ErrNotSupported},
		{"a bit of no type", 0x10, 64 * kib, cudart.ErrInvalidValue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.MemCreateExportable(0, tt.size, tt.types)
			assert.ErrorIs(t, err, tt.want)
			if tt.size == 64*kib {
				_, err = f.MemGetExportableGranularity(0, tt.types, true)
				assert.ErrorIs(t, err, tt.want, "the granularity of memory no allocation can have")
			}
			assert.NoError(t, f.CheckLeaks())
		})
	}
}
