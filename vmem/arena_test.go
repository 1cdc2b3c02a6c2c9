package vmem_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/vmem"
)

// growthCalls is what one growth of an Arena costs: one physical allocation
// of the whole delta, mapped and made accessible with one call each.
var growthCalls = []string{"cuMemCreate", "cuMemMap", "cuMemSetAccess"}

func TestArenaEnsureMapsWhatIsMissingInOneGrowth(t *testing.T) {
	type step struct {
		ensure uint64
		mapped uint64 // after the call
		grew   bool   // the call made one growth
	}
	for _, tc := range []struct {
		name  string
		max   uint64
		chunk uint64
		steps []step
	}{
		{"granule by granule", 8 * g, 0, []step{{1, g, true}, {g, g, false}, {g + 1, 2 * g, true}, {5 * g, 5 * g, true}, {3 * g, 5 * g, false}}},
		{"zero maps nothing", 8 * g, 0, []step{{0, 0, false}, {0, 0, false}}},
		{"whole arena at once", 8 * g, 0, []step{{8 * g, 8 * g, true}, {8 * g, 8 * g, false}}},
		{"chunk of four granules", 16 * g, 4 * g, []step{{1, 4 * g, true}, {4 * g, 4 * g, false}, {4*g + 1, 8 * g, true}}},
		{"chunk clamped to the reservation", 6 * g, 4 * g, []step{{5 * g, 6 * g, true}, {6 * g, 6 * g, false}}},
		{"max not a multiple of the granularity", 3*g + 1, 0, []step{{3*g + 1, 4 * g, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			var opts []vmem.Option
			if tc.chunk != 0 {
				opts = append(opts, vmem.WithChunk(tc.chunk))
			}
			a, err := vmem.NewArena(f, 0, tc.max, opts...)
			require.NoError(t, err)
			defer func() { require.NoError(t, a.Close()) }()
			base := a.Base()
			growths := 0
			for _, s := range tc.steps {
				f.ResetCalls()
				require.NoError(t, a.Ensure(s.ensure))
				assert.Equal(t, s.mapped, a.Mapped(), "Ensure(%d)", s.ensure)
				assert.Equal(t, base, a.Base(), "the base never moves")
				if s.grew {
					growths++
					assert.Equal(t, growthCalls, f.Calls(), "Ensure(%d)", s.ensure)
				} else {
					assert.Empty(t, f.Calls(), "Ensure(%d) had nothing to map", s.ensure)
				}
				live := f.Live()
				assert.Equal(t, growths, live.PhysAllocs)
				assert.Equal(t, s.mapped, live.PhysBytes)
			}
		})
	}
}

func TestArenaExhaustedPastMax(t *testing.T) {
	f := newFake(t)
	a, err := vmem.NewArena(f, 0, 3<<20)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	require.NoError(t, a.Ensure(1<<20))
	f.ResetCalls()

	err = a.Ensure(3<<20 + 1)
	require.ErrorIs(t, err, vmem.ErrExhausted)
	var ex *vmem.ExhaustedError
	require.ErrorAs(t, err, &ex)
	assert.Equal(t, vmem.ExhaustedError{Asked: 3<<20 + 1, Max: 3 << 20, Mapped: 1 << 20}, *ex)
	assert.Equal(t, "vmem: arena exhausted: asked for 3.0 MiB, max 3.0 MiB (1.0 MiB mapped)", err.Error())
	assert.Empty(t, f.Calls(), "an exhausted Ensure calls no CUDA")
	assert.Equal(t, uint64(1<<20), a.Mapped())
	assert.ErrorIs(t, a.Ensure(^uint64(0)), vmem.ErrExhausted)
	assert.NoError(t, a.Ensure(3<<20), "exactly max fits")
}

func TestArenaKeepsDataAsItGrows(t *testing.T) {
	forEachRuntime(t, 1, func(t *testing.T, rt cudart.Full, gran uint64) {
		a, err := vmem.NewArena(rt, 0, 64*gran)
		require.NoError(t, err)
		defer func() { require.NoError(t, a.Close()) }()
		var want []byte
		for i, n := range []uint64{gran, 3 * gran, 8 * gran, 32 * gran} {
			require.NoError(t, a.Ensure(n))
			more := pattern(byte(i+1), n-uint64(len(want)))
			put(t, rt, 0, a.Base().Add(uint64(len(want))), more, gran)
			want = append(want, more...)
			require.Equal(t, want, get(t, rt, 0, a.Base(), n, n), "after Ensure(%d), one copy over the whole arena", n)
		}
	})
}

func TestArenaMapsNoMoreThanAsked(t *testing.T) {
	f := newFake(t)
	a, err := vmem.NewArena(f, 0, 8*g)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	require.NoError(t, a.Ensure(2*g))
	buf := make([]byte, 1)
	err = f.Memcpy(0, cudart.HostMem(buf), cudart.DeviceMem(a.Base().Add(2*g), 1), cudart.DeviceToHost)
	assert.Error(t, err, "the byte after Mapped is reserved, not mapped")
}

func TestArenaTrimGivesBackWholeGrowths(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ensures []uint64
		trim    uint64
		mapped  uint64
	}{
		{"to zero", []uint64{g, 4 * g}, 0, 0},
		{"at a growth boundary", []uint64{g, 4 * g, 6 * g}, 4 * g, 4 * g},
		{"inside a growth keeps it", []uint64{g, 4 * g, 6 * g}, 2 * g, 4 * g},
		{"one byte in keeps the first growth", []uint64{g, 4 * g}, 1, g},
		{"past what is mapped", []uint64{2 * g}, 5 * g, 2 * g},
		{"nothing mapped", nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			a, err := vmem.NewArena(f, 0, 8*g)
			require.NoError(t, err)
			defer func() { require.NoError(t, a.Close()) }()
			for _, n := range tc.ensures {
				require.NoError(t, a.Ensure(n))
			}
			require.NoError(t, a.Trim(tc.trim))
			assert.Equal(t, tc.mapped, a.Mapped())
			assert.Equal(t, tc.mapped, f.Live().PhysBytes, "trimmed memory is given back to the device")
			assert.Equal(t, tc.mapped, f.Live().MappedBytes)
			require.NoError(t, a.Ensure(8*g), "the address range is kept for the next growth")
			assert.Equal(t, uint64(8*g), a.Mapped())
		})
	}
}

func TestArenaTrimThatFailsKeepsTheGrowth(t *testing.T) {
	f := newFake(t)
	a, err := vmem.NewArena(f, 0, 8*g)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	require.NoError(t, a.Ensure(g))
	require.NoError(t, a.Ensure(4*g))
	require.NoError(t, f.FailCall("cuMemUnmap", 1))
	require.ErrorIs(t, a.Trim(0), cudart.ErrInvalidValue)
	f.ClearFaults()
	assert.Equal(t, uint64(4*g), a.Mapped(), "what failed to unmap is still counted as mapped")
	data := pattern(3, 4*g)
	put(t, f, 0, a.Base(), data, g)
	assert.Equal(t, data, get(t, f, 0, a.Base(), 4*g, g))
}

func TestArenaTrimWhoseReleaseFailsRetriesAtClose(t *testing.T) {
	f := newFake(t)
	a, err := vmem.NewArena(f, 0, 8*g)
	require.NoError(t, err)
	require.NoError(t, a.Ensure(4*g))
	require.NoError(t, f.FailCallNth("cuMemRelease", 1, 999))
	require.NoError(t, a.Trim(0), "the memory is unmapped; its release is retried")
	assert.Zero(t, a.Mapped())
	assert.Equal(t, 1, f.Live().PhysAllocs, "the release failed")
	require.NoError(t, a.Close())
	assert.NoError(t, f.CheckLeaks())
}

func TestArenaClose(t *testing.T) {
	f := newFake(t)
	a, err := vmem.NewArena(f, 0, 8*g, vmem.WithChunk(2*g))
	require.NoError(t, err)
	require.NoError(t, a.Ensure(g))
	require.NoError(t, a.Ensure(5*g))
	require.NoError(t, a.Close())
	assert.True(t, f.Live().Empty(), "Close gives back everything: %+v", f.Live())
	assert.NoError(t, a.Close(), "Close is idempotent")
	assert.ErrorIs(t, a.Ensure(g), vmem.ErrClosed)
	assert.ErrorIs(t, a.Trim(0), vmem.ErrClosed)
}

func TestArenaCloseThatFailsIsRetried(t *testing.T) {
	for _, call := range []string{"cuMemUnmap", "cuMemRelease", "cuMemAddressFree"} {
		t.Run(call, func(t *testing.T) {
			f := newFake(t)
			a, err := vmem.NewArena(f, 0, 8*g)
			require.NoError(t, err)
			require.NoError(t, a.Ensure(g))
			require.NoError(t, a.Ensure(2*g))
			require.NoError(t, f.FailCallNth(call, 1, 999))
			err = a.Close()
			require.Error(t, err)
			assert.ErrorIs(t, err, cudart.NewError("", 999))
			assert.Contains(t, err.Error(), "call Close again to retry")
			assert.Equal(t, 1, f.Live().Reservations, "the range is freed last, once nothing is mapped")
			assert.ErrorIs(t, a.Ensure(3*g), vmem.ErrClosed)

			f.ClearFaults()
			require.NoError(t, a.Close(), "the second Close frees what the first could not")
			assert.True(t, f.Live().Empty())
			require.NoError(t, a.Close())
		})
	}
}

func TestNewArenaRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		max   uint64
		opts  []vmem.Option
		fault string
		want  error
	}{
		{"zero max", 0, nil, "", vmem.ErrInvalidSize},
		{"max that overflows", ^uint64(0), nil, "", vmem.ErrInvalidSize},
		{"chunk not a multiple of the granularity", 8 * g, []vmem.Option{vmem.WithChunk(g + g/2)}, "", vmem.ErrInvalidOption},
		{"negative peer", 8 * g, []vmem.Option{vmem.WithPeers(-1)}, "", vmem.ErrInvalidOption},
		{"granularity query fails", 8 * g, nil, "cuMemGetAllocationGranularity", cudart.ErrInvalidDevice},
		{"reservation fails", 8 * g, nil, "cuMemAddressReserve", cudart.ErrInvalidDevice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			if tc.fault != "" {
				require.NoError(t, f.FailCall(tc.fault, 101))
			}
			a, err := vmem.NewArena(f, 0, tc.max, tc.opts...)
			assert.Nil(t, a)
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func TestArenaOnAMissingDevice(t *testing.T) {
	f := newFake(t)
	_, err := vmem.NewArena(f, 3, 8*g)
	assert.True(t, errors.Is(err, cudart.ErrInvalidDevice), "%v", err)
}

func TestArenaOutOfDeviceMemoryChangesNothing(t *testing.T) {
	f := newFake(t, cudarttest.WithDeviceMemory(4*g))
	a, err := vmem.NewArena(f, 0, 64*g)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	require.NoError(t, a.Ensure(3*g))
	err = a.Ensure(5 * g)
	require.ErrorIs(t, err, cudart.ErrMemoryAllocation, "reserving more than the device has is fine; mapping it is not")
	assert.Contains(t, err.Error(), "grow arena")
	assert.Equal(t, uint64(3*g), a.Mapped())
	assert.NoError(t, a.Ensure(4*g))
}

func TestArenaAndVectorAreSafeForConcurrentUse(t *testing.T) {
	f := newFake(t)
	a, err := vmem.NewArena(f, 0, 64*g)
	require.NoError(t, err)
	v, err := vmem.NewVector(f, 0)
	require.NoError(t, err)
	done := make(chan struct{})
	for w := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				n := uint64((w*50+i)%64+1) * g / 2
				assert.NoError(t, a.Ensure(n))
				assert.GreaterOrEqual(t, a.Mapped(), n)
				assert.NoError(t, v.Grow(n))
				assert.GreaterOrEqual(t, v.Size(), n)
				_ = v.Ptr()
			}
		}()
	}
	for range 8 {
		<-done
	}
	assert.Equal(t, uint64(32*g), a.Mapped(), "the largest request, rounded up")
	assert.Equal(t, uint64(32*g), v.Size())
	assert.Equal(t, uint64(64*g), f.Live().PhysBytes)
	require.NoError(t, a.Close())
	require.NoError(t, v.Close())
}

// exportableGranularity is the fake with memory exportable as a file
// descriptor at a granularity of its own, twice that of memory that is not.
type exportableGranularity struct{ *cudarttest.Fake }

func (e exportableGranularity) MemGetExportableGranularity(device int, types cudart.HandleType, recommended bool) (uint64, error) {
	gran, err := e.Fake.MemGetExportableGranularity(device, types, recommended)
	return 2 * gran, err
}

// WithHandleTypes: every growth makes memory exportable as the types asked,
// in granules of the granularity of such memory; a type CUDA refuses fails
// the arena at NewArena.
func TestArenaWithHandleTypesMakesExportableMemory(t *testing.T) {
	const fd = cudart.HandleTypePOSIXFileDescriptor
	f := newFake(t)
	a, err := vmem.NewArena(exportableGranularity{f}, 0, 8*g, vmem.WithHandleTypes(fd))
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	require.NoError(t, a.Ensure(1))
	assert.Equal(t, uint64(2*g), a.Mapped(), "a growth is a granule of exportable memory")
	require.NoError(t, a.Ensure(3*g))
	assert.Equal(t, uint64(4*g), a.Mapped())
	leaks := f.CheckLeaks()
	require.Error(t, leaks, "the arena's memory is live")
	assert.Equal(t, 2, strings.Count(leaks.Error(), "exportable as CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"), "each growth is exportable: %v", leaks)

	_, err = vmem.NewArena(f, 0, 8*g, vmem.WithHandleTypes(0x8))
	assert.ErrorIs(t, err, cudart.ErrNotSupported, "a fabric handle, which the fake's host lacks")
}

// An Arena of memory exportable as a file descriptor maps, writes and reads
// as any other, on CUDA as on the fake.
func TestArenaOfExportableMemoryRoundTrips(t *testing.T) {
	const fd = cudart.HandleTypePOSIXFileDescriptor
	forEachRuntime(t, 1, func(t *testing.T, rt cudart.Full, _ uint64) {
		gran, err := rt.MemGetExportableGranularity(0, fd, true)
		require.NoError(t, err)
		a, err := vmem.NewArena(rt, 0, 4*gran, vmem.WithHandleTypes(fd))
		require.NoError(t, err)
		defer func() { require.NoError(t, a.Close()) }()
		require.NoError(t, a.Ensure(3*gran))
		assert.Equal(t, 3*gran, a.Mapped())
		data := pattern(5, 3*gran)
		put(t, rt, 0, a.Base(), data, gran)
		assert.Equal(t, data, get(t, rt, 0, a.Base(), 3*gran, gran))
	})
}
