package vmem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/vmem"
)

// block reserves a granule right after the vector's reservation, so that
// the vector's next hinted reservation is refused and it must move. The
// returned function frees it.
func block(t *testing.T, f *cudarttest.Fake, v *vmem.Vector) func() {
	t.Helper()
	unblock, ok := tryBlock(t, f, v, g)
	require.True(t, ok, "the fake honours a free, aligned hint")
	return unblock
}

// tryBlock reserves gran bytes right after the vector's reservation; ok is
// false, and nothing is left reserved, where CUDA put them elsewhere.
func tryBlock(t *testing.T, vm cudart.VirtualMemory, v *vmem.Vector, gran uint64) (unblock func(), ok bool) {
	t.Helper()
	at := v.Ptr().Add(v.Reserved())
	p, err := vm.MemAddressReserve(gran, 0, at)
	require.NoError(t, err)
	if p != at {
		require.NoError(t, vm.MemAddressFree(p, gran))
		return nil, false
	}
	return func() { require.NoError(t, vm.MemAddressFree(p, gran)) }, true
}

// growMoved grows v to size with gran bytes right after its reservation
// taken (tryBlock), so that it must move, and asserts it moved; it skips
// the test where CUDA put the block elsewhere. unblock frees the block.
func growMoved(t *testing.T, vm cudart.VirtualMemory, v *vmem.Vector, gran, size uint64) (unblock func()) {
	t.Helper()
	unblock, ok := tryBlock(t, vm, v, gran)
	if !ok {
		t.Skip("CUDA did not honour the hint that blocks the vector")
	}
	old := v.Ptr()
	if err := v.Grow(size); err != nil || v.Ptr() == old {
		unblock()
		require.NoError(t, err)
		require.NotEqual(t, old, v.Ptr(), "the vector moved")
	}
	return unblock
}

func TestVectorGrowsInPlaceWithTheHint(t *testing.T) {
	f := newFake(t)
	v, err := vmem.NewVector(f, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, v.Close()) }()
	assert.Zero(t, v.Ptr())
	assert.Zero(t, v.Size())

	require.NoError(t, v.Grow(1))
	ptr := v.Ptr()
	require.NotZero(t, ptr)
	var want []byte
	for i, n := range []uint64{g, 2 * g, 4 * g, 8 * g, 16 * g} {
		f.ResetCalls()
		require.NoError(t, v.Grow(n))
		if i > 0 {
			assert.Equal(t, []string{"cuMemAddressReserve", "cuMemCreate", "cuMemMap", "cuMemSetAccess"}, f.Calls(), "Grow(%d)", n)
		}
		assert.Equal(t, ptr, v.Ptr(), "the hinted range extends the vector in place")
		assert.Equal(t, n, v.Size())
		assert.Equal(t, n, v.Reserved())
		more := pattern(byte(i), n-uint64(len(want)))
		put(t, f, 0, ptr.Add(uint64(len(want))), more, g)
		want = append(want, more...)
		assert.Equal(t, want, get(t, f, 0, ptr, n, g))
	}
	live := f.Live()
	assert.Equal(t, 5, live.Reservations, "one range per growth, adjacent")
	assert.Equal(t, 5, live.PhysAllocs, "one allocation per growth")
}

func TestVectorMovesWithoutCopyingWhenTheHintIsRefused(t *testing.T) {
	f := newFake(t)
	v, err := vmem.NewVector(f, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, v.Close()) }()
	require.NoError(t, v.Grow(g))
	require.NoError(t, v.Grow(3*g))
	old := v.Ptr()
	data := pattern(9, 3*g)
	put(t, f, 0, old, data, g)
	unblock := block(t, f, v)
	defer unblock()

	f.ResetCalls()
	require.NoError(t, v.Grow(4*g))
	assert.NotEqual(t, old, v.Ptr(), "the vector moved")
	assert.Equal(t, uint64(4*g), v.Size())
	assert.Equal(t, []string{
		"cuMemAddressReserve", "cuMemAddressFree", // the hint refused: the range elsewhere is given back
		"cuMemAddressReserve",                    // a new range for the whole vector
		"cuMemMap", "cuMemMap", "cuMemSetAccess", // its two allocations mapped again, access in one call
		"cuMemCreate", "cuMemMap", "cuMemSetAccess", // the growth
		"cuMemUnmap", "cuMemUnmap", "cuMemAddressFree", "cuMemAddressFree", // the old ranges given up
	}, f.Calls(), "no cudaMemcpy: the memory is mapped again, not copied")
	assert.Equal(t, data, get(t, f, 0, v.Ptr(), 3*g, 3*g), "the data moved with the memory, in one range now")
	live := f.Live()
	assert.Equal(t, 2, live.Reservations, "the vector's one range and the blocker")
	assert.Equal(t, 3, live.PhysAllocs)
	assert.Equal(t, uint64(4*g), live.MappedBytes, "nothing is left mapped at the old address")
	buf := make([]byte, 1)
	assert.Error(t, f.Memcpy(0, cudart.HostMem(buf), cudart.DeviceMem(old, 1), cudart.DeviceToHost), "the old address is freed")
}

func TestVectorReserveMapsNothing(t *testing.T) {
	f := newFake(t)
	v, err := vmem.NewVector(f, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, v.Close()) }()
	require.NoError(t, v.Reserve(10*g+1))
	assert.Equal(t, uint64(11*g), v.Reserved())
	assert.Zero(t, v.Size())
	assert.Zero(t, f.Live().PhysBytes)
	ptr := v.Ptr()
	f.ResetCalls()
	require.NoError(t, v.Reserve(5*g))
	assert.Empty(t, f.Calls(), "already reserved")
	require.NoError(t, v.Grow(11*g))
	assert.Equal(t, ptr, v.Ptr())
	assert.Equal(t, 1, f.Live().Reservations, "growing within the reservation reserves nothing")
}

func TestVectorGrowthAcrossTwoReservationsMapsEachSeparately(t *testing.T) {
	f := newFake(t)
	v, err := vmem.NewVector(f, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, v.Close()) }()
	require.NoError(t, v.Reserve(2*g))
	require.NoError(t, v.Grow(g))
	f.ResetCalls()
	require.NoError(t, v.Grow(4*g))
	assert.Equal(t, []string{
		"cuMemAddressReserve",
		"cuMemCreate", "cuMemMap", "cuMemSetAccess", // the rest of the first range
		"cuMemCreate", "cuMemMap", "cuMemSetAccess", // the new range
	}, f.Calls(), "CUDA maps within one reservation")
	data := pattern(5, 4*g)
	put(t, f, 0, v.Ptr(), data, g)
	assert.Equal(t, data, get(t, f, 0, v.Ptr(), 4*g, g))
}

func TestVectorChunk(t *testing.T) {
	f := newFake(t)
	v, err := vmem.NewVector(f, 0, vmem.WithChunk(4*g))
	require.NoError(t, err)
	defer func() { require.NoError(t, v.Close()) }()
	require.NoError(t, v.Grow(1))
	assert.Equal(t, uint64(4*g), v.Size())
	require.NoError(t, v.Grow(4*g+1))
	assert.Equal(t, uint64(8*g), v.Size())
	assert.Equal(t, 2, f.Live().PhysAllocs)
}

func TestVectorBadSizesAndClose(t *testing.T) {
	f := newFake(t)
	v, err := vmem.NewVector(f, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, v.Grow(^uint64(0)), vmem.ErrInvalidSize)
	assert.ErrorIs(t, v.Reserve(^uint64(0)), vmem.ErrInvalidSize)
	assert.NoError(t, v.Grow(0))
	assert.True(t, f.Live().Empty())
	require.NoError(t, v.Grow(g))
	require.NoError(t, v.Close())
	assert.True(t, f.Live().Empty(), "%+v", f.Live())
	assert.NoError(t, v.Close(), "Close is idempotent")
	assert.ErrorIs(t, v.Grow(2*g), vmem.ErrClosed)
	assert.ErrorIs(t, v.Reserve(2*g), vmem.ErrClosed)
}

func TestVectorOutOfDeviceMemoryChangesNothing(t *testing.T) {
	f := newFake(t, cudarttest.WithDeviceMemory(4*g))
	v, err := vmem.NewVector(f, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, v.Close()) }()
	require.NoError(t, v.Grow(3*g))
	ptr := v.Ptr()
	err = v.Grow(5 * g)
	require.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	assert.Contains(t, err.Error(), "grow vector")
	assert.Equal(t, ptr, v.Ptr())
	assert.Equal(t, uint64(3*g), v.Size())
	assert.Equal(t, uint64(3*g), v.Reserved(), "the range reserved for the failed growth is freed")
	assert.Equal(t, 1, f.Live().Reservations)
	assert.NoError(t, v.Grow(4*g), "every byte of the device can be mapped")
}

func TestNewVectorRejects(t *testing.T) {
	f := newFake(t)
	_, err := vmem.NewVector(f, 0, vmem.WithChunk(3*g/2))
	assert.ErrorIs(t, err, vmem.ErrInvalidOption)
	_, err = vmem.NewVector(f, 0, vmem.WithPeers(0, -2))
	assert.ErrorIs(t, err, vmem.ErrInvalidOption)
	_, err = vmem.NewVector(f, 1)
	assert.ErrorIs(t, err, cudart.ErrInvalidDevice)
}

func TestVectorKeepsDataAsItGrows(t *testing.T) {
	forEachRuntime(t, 1, func(t *testing.T, rt cudart.Full, gran uint64) {
		v, err := vmem.NewVector(rt, 0)
		require.NoError(t, err)
		defer func() { require.NoError(t, v.Close()) }()
		var want []byte
		for i, n := range []uint64{gran, 2 * gran, 5 * gran, 16 * gran} {
			require.NoError(t, v.Grow(n))
			require.Equal(t, n, v.Size())
			more := pattern(byte(i+1), n-uint64(len(want)))
			put(t, rt, 0, v.Ptr().Add(uint64(len(want))), more, gran)
			want = append(want, more...)
			require.Equal(t, want, get(t, rt, 0, v.Ptr(), n, gran))
		}
	})
}

// TestVectorMoveKeepsData blocks the address space after the vector, so
// that growing it must move it: on CUDA this checks that mapping memory
// at a second address and granting access to several mappings in one call
// work as the fake models them.
func TestVectorMoveKeepsData(t *testing.T) {
	forEachRuntime(t, 1, func(t *testing.T, rt cudart.Full, gran uint64) {
		v, err := vmem.NewVector(rt, 0)
		require.NoError(t, err)
		defer func() { require.NoError(t, v.Close()) }()
		require.NoError(t, v.Grow(gran))
		require.NoError(t, v.Grow(3*gran))
		data := pattern(4, 3*gran)
		put(t, rt, 0, v.Ptr(), data, gran)
		defer growMoved(t, rt, v, gran, 8*gran)()
		assert.Equal(t, data, get(t, rt, 0, v.Ptr(), 3*gran, gran))
		more := pattern(5, 5*gran)
		put(t, rt, 0, v.Ptr().Add(3*gran), more, gran)
		assert.Equal(t, more, get(t, rt, 0, v.Ptr().Add(3*gran), 5*gran, gran))
	})
}

// TestVectorCopiesAcrossReservationsOnCUDA checks that one copy spans the
// reservations of a vector grown in place: CUDA addresses them as one run.
// The fake confines a copy to one reservation, so this runs on CUDA only.
func TestVectorCopiesAcrossReservationsOnCUDA(t *testing.T) {
	lib := openCUDA(t, 1)
	gran, err := lib.MemGetAllocationGranularity(0, true)
	require.NoError(t, err)
	v, err := vmem.NewVector(lib, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, v.Close()) }()
	for _, n := range []uint64{gran, 2 * gran, 4 * gran} {
		require.NoError(t, v.Grow(n))
	}
	data := pattern(7, 4*gran)
	require.NoError(t, lib.Memcpy(0, cudart.DeviceMem(v.Ptr(), 4*gran), cudart.HostMem(data), cudart.HostToDevice))
	out := make([]byte, 4*gran)
	require.NoError(t, lib.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(v.Ptr(), 4*gran), cudart.DeviceToHost))
	assert.Equal(t, data, out)
}

func TestVectorCloseThatFailsIsRetried(t *testing.T) {
	for _, call := range []string{"cuMemUnmap", "cuMemRelease", "cuMemAddressFree"} {
		t.Run(call, func(t *testing.T) {
			f := newFake(t)
			v, err := vmem.NewVector(f, 0)
			require.NoError(t, err)
			require.NoError(t, v.Grow(g))
			require.NoError(t, v.Grow(4*g))
			require.NoError(t, f.FailCallNth(call, 1, 999))
			require.Error(t, v.Close())
			assert.False(t, f.Live().Empty())
			assert.ErrorIs(t, v.Grow(8*g), vmem.ErrClosed)
			f.ClearFaults()
			require.NoError(t, v.Close())
			assert.True(t, f.Live().Empty())
		})
	}
}

// WithHandleTypes makes a Vector's growths exportable too.
func TestVectorWithHandleTypesMakesExportableMemory(t *testing.T) {
	f := newFake(t)
	v, err := vmem.NewVector(f, 0, vmem.WithHandleTypes(cudart.HandleTypePOSIXFileDescriptor))
	require.NoError(t, err)
	defer func() { require.NoError(t, v.Close()) }()
	require.NoError(t, v.Grow(3*g))
	leaks := f.CheckLeaks()
	require.Error(t, leaks, "the vector's memory is live")
	assert.Contains(t, leaks.Error(), "exportable as CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR")
}
