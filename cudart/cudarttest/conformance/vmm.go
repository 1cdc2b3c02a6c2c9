package conformance

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// vmm is the virtual memory part of a suite run.
type vmm struct {
	*suite
	vm cudart.VirtualMemory
	g  uint64 // the minimum allocation granularity
}

// virtualMemory is the suite's virtual memory, or skips t where the
// runtime has none or the driver cannot give it.
func (s *suite) virtualMemory(t *testing.T) *vmm {
	t.Helper()
	vm := need[cudart.VirtualMemory](t, s.rt)
	g, err := vm.MemGetAllocationGranularity(s.dev, false)
	if errors.Is(err, cudart.ErrNoDriverLibrary) || errors.Is(err, cudart.ErrNotSupported) {
		t.Skipf("virtual memory unavailable: %v", err)
	}
	require.NoError(t, err)
	return &vmm{suite: s, vm: vm, g: g}
}

func (s *suite) testVirtualMemory(t *testing.T) {
	v := s.virtualMemory(t)
	grec, err := v.vm.MemGetAllocationGranularity(s.dev, true)
	require.NoError(t, err)
	require.True(t, align.IsPowerOfTwo(v.g), "minimum granularity %d is a power of two", v.g)
	assert.True(t, align.IsPowerOfTwo(grec), "recommended granularity %d is a power of two", grec)
	t.Run("MapWriteReadAlias", v.testMapAlias)
	t.Run("ReleaseWhileMapped", v.testReleaseWhileMapped)
	t.Run("CopyAcrossMappings", v.testCopyAcrossMappings)
	t.Run("ReserveHint", v.testReserveHint)
	t.Run("ReserveHintNearTop", v.testReserveHintNearTop)
	t.Run("ReserveFreeLoop", v.testReserveFreeLoop)
	t.Run("PeerAccess", v.testPeerAccess)
	t.Run("Exportable", v.testExportable)
}

// testExportable: memory exportable as a POSIX file descriptor (what NCCL's
// windows need) has a granularity of its own, a power of two, which may
// differ from that of memory that is not (both are logged), and is mapped,
// written and read as any other. Which handle types CUDA refuses depends on
// the platform and the device, so the suite asserts none.
func (v *vmm) testExportable(t *testing.T) {
	const fd = cudart.HandleTypePOSIXFileDescriptor
	gmin, err := v.vm.MemGetExportableGranularity(v.dev, fd, false)
	require.NoError(t, err, calls.CuMemGetAllocationGranularity)
	grec, err := v.vm.MemGetExportableGranularity(v.dev, fd, true)
	require.NoError(t, err, calls.CuMemGetAllocationGranularity)
	t.Logf("granularity exportable as a file descriptor: minimum %d, recommended %d (not exportable: minimum %d)", gmin, grec, v.g)
	require.True(t, align.IsPowerOfTwo(gmin), "minimum granularity %d is a power of two", gmin)
	assert.True(t, align.IsPowerOfTwo(grec), "recommended granularity %d is a power of two", grec)
	h, err := v.vm.MemCreateExportable(v.dev, gmin, fd)
	require.NoError(t, err, calls.CuMemCreate)
	release := once(t, calls.CuMemRelease, func() error { return v.vm.MemRelease(h) })
	va := v.reserve(t, gmin, 0)
	unmap := v.mapAt(t, va, gmin, h)
	want := pattern(83, int(gmin))
	v.write(t, va, want)
	assert.True(t, bytes.Equal(want, v.read(t, va, gmin)), "write then read through the mapping")
	unmap()
	release()
}

// testPeerAccess: MemSetAccess grants another device access where
// DeviceCanAccessPeer says it can, and fails where it says it cannot.
func (v *vmm) testPeerAccess(t *testing.T) {
	d, ok := v.rt.(cudart.Device)
	if !ok {
		t.Skip("runtime does not implement cudart.Device")
	}
	count, err := v.rt.DeviceCount()
	require.NoError(t, err)
	if count < 2 {
		t.Skip("one device")
	}
	h, _ := v.create(t, v.g)
	va := v.reserve(t, v.g, 0)
	v.mapAt(t, va, v.g, h)
	for peer := range count {
		if peer == v.dev {
			continue
		}
		can, err := d.DeviceCanAccessPeer(peer, v.dev)
		require.NoError(t, err)
		err = v.vm.MemSetAccess(va, v.g, []int{v.dev, peer})
		if can {
			assert.NoError(t, err, "device %d can access device %d", peer, v.dev)
		} else {
			assert.Error(t, err, "device %d cannot access device %d", peer, v.dev)
		}
	}
}

// create makes physical memory released at cleanup unless released first.
func (v *vmm) create(t testing.TB, size uint64) (cudart.PhysHandle, func()) {
	t.Helper()
	h, err := v.vm.MemCreate(v.dev, size)
	require.NoError(t, err, calls.CuMemCreate)
	return h, once(t, calls.CuMemRelease, func() error { return v.vm.MemRelease(h) })
}

// reserve reserves address space freed at cleanup. Cleanups run in reverse,
// so mappings made after it are unmapped before it is freed.
func (v *vmm) reserve(t testing.TB, size uint64, hint cudart.DevicePtr) cudart.DevicePtr {
	t.Helper()
	p, err := v.vm.MemAddressReserve(size, 0, hint)
	require.NoError(t, err, calls.CuMemAddressReserve)
	require.NotZero(t, p)
	once(t, calls.CuMemAddressFree, func() error { return v.vm.MemAddressFree(p, size) })
	return p
}

// mapAt maps size bytes of h at p, makes them accessible to the suite's
// device, and returns the unmap.
func (v *vmm) mapAt(t testing.TB, p cudart.DevicePtr, size uint64, h cudart.PhysHandle) func() {
	t.Helper()
	require.NoError(t, v.vm.MemMap(p, size, 0, h), calls.CuMemMap)
	unmap := once(t, calls.CuMemUnmap, func() error { return v.vm.MemUnmap(p, size) })
	require.NoError(t, v.vm.MemSetAccess(p, size, []int{v.dev}), calls.CuMemSetAccess)
	return unmap
}

func (v *vmm) testMapAlias(t *testing.T) {
	g := v.g
	h, _ := v.create(t, g)
	va := v.reserve(t, 4*g, 0)
	assert.True(t, align.Is(uint64(va), g), "reservation %s is aligned to the granularity", va)
	v.mapAt(t, va, g, h)
	want := pattern(80, int(g))
	v.write(t, va, want)
	assert.True(t, bytes.Equal(want, v.read(t, va, g)), "write then read through the mapping")

	second := va.Add(2 * g)
	v.mapAt(t, second, g, h)
	assert.True(t, bytes.Equal(want, v.read(t, second, g)), "a second mapping of the same memory reads the same bytes")
	require.NoError(t, v.rt.Memset(v.dev, second, 0x33, 100))
	require.NoError(t, v.rt.DeviceSynchronize(v.dev))
	got := v.read(t, va, 200)
	assert.Equal(t, -1, filled(got[:100], 0x33), "a memset through one mapping shows through the other")
	assert.Equal(t, want[100:200], got[100:200], "and changes nothing past its end")
}

func (v *vmm) testReleaseWhileMapped(t *testing.T) {
	g := v.g
	h, release := v.create(t, g)
	va := v.reserve(t, g, 0)
	unmap := v.mapAt(t, va, g, h)
	want := pattern(81, int(g))
	v.write(t, va, want)
	release()
	assert.True(t, bytes.Equal(want, v.read(t, va, g)), "released memory stays usable while mapped")
	unmap()
}

func (v *vmm) testCopyAcrossMappings(t *testing.T) {
	// A range grown by mapping more physical memory after it is one
	// contiguous range to copies: the reason to grow in place.
	g := v.g
	h1, _ := v.create(t, g)
	h2, _ := v.create(t, g)
	va := v.reserve(t, 2*g, 0)
	v.mapAt(t, va, g, h1)
	v.mapAt(t, va.Add(g), g, h2)
	want := pattern(82, 2*int(g))
	v.write(t, va, want)
	assert.True(t, bytes.Equal(want, v.read(t, va, 2*g)), "a copy across two mappings round trips")
	const w = 4 * kib
	mid := va.Add(g - w/2)
	assert.True(t, bytes.Equal(want[g-w/2:g+w/2], v.read(t, mid, w)), "a copy straddling the boundary reads both mappings")
}

func (v *vmm) testReserveHint(t *testing.T) {
	g := v.g
	va := v.reserve(t, 2*g, 0)
	hint := va.Add(2 * g)
	next := v.reserve(t, g, hint)
	if next == hint {
		t.Logf("hint %s honoured", hint)
	} else {
		t.Logf("hint %s not honoured: got %s", hint, next)
	}
	overlap := next < va.Add(2*g) && va < next.Add(g)
	assert.False(t, overlap, "reservation %s overlaps the earlier one at %s", next, va)
	assert.True(t, align.Is(uint64(next), g), "reservation %s is aligned to the granularity", next)
}

// testReserveFreeLoop: address space that is freed is given again. 5,000
// reservations of 64 GiB, each freed before the next, take 320 TiB in all,
// more than a GPU's address space: each is granted, aligned, below 2^64,
// and can be freed. CUDA does not promise which address comes back, so the
// suite asserts none.
func (v *vmm) testReserveFreeLoop(t *testing.T) {
	const size, n = 64 << 30, 5000
	seen := map[cudart.DevicePtr]bool{}
	for i := range n {
		p, err := v.vm.MemAddressReserve(size, 0, 0)
		require.NoError(t, err, "reservation %d of %d", i+1, n)
		require.NotZero(t, p)
		require.True(t, uint64(p) <= math.MaxUint64-size, "reservation %d at %s ends past 2^64", i+1, p)
		require.True(t, align.Is(uint64(p), v.g), "reservation %d at %s is aligned to the granularity", i+1, p)
		require.NoError(t, v.vm.MemAddressFree(p, size), "freeing reservation %d at %s", i+1, p)
		seen[p] = true
	}
	t.Logf("%d reservations of 64 GiB, freed each time, came at %d addresses", n, len(seen))
}

// testReserveHintNearTop: a hint whose range ends at 2^64, or just below it,
// names addresses no GPU has: CUDA 13.0 refuses it with
// CUDA_ERROR_OUT_OF_MEMORY (measured on an H100), and the allocations after
// it each lie below 2^64, overlapping nothing.
func (v *vmm) testReserveHintNearTop(t *testing.T) {
	g := v.g
	type span struct{ p, n uint64 }
	var spans []span
	add := func(what string, p cudart.DevicePtr, n uint64) {
		t.Logf("%s: %s, %d B", what, p, n)
		require.True(t, uint64(p) <= math.MaxUint64-n, "%s at %s, %d B, wraps past 2^64", what, p, n)
		for _, o := range spans {
			assert.False(t, uint64(p) < o.p+o.n && o.p < uint64(p)+n, "%s at %s overlaps the range at %#x", what, p, o.p)
		}
		spans = append(spans, span{uint64(p), n})
	}
	for _, k := range []uint64{1, 2, 4} {
		hint := -k * g
		p, err := v.vm.MemAddressReserve(g, 0, cudart.DevicePtr(hint))
		if err == nil {
			once(t, calls.CuMemAddressFree, func() error { return v.vm.MemAddressFree(p, g) })
		}
		t.Logf("reservation hinted at %#x: %v", hint, err)
		require.ErrorIs(t, err, cudart.ErrMemoryAllocation, "a hint past the GPU's addresses")
	}
	const big = 4 * mib
	add("cudaMalloc of 4 MiB", v.malloc(t, big), big)
	add("cudaMalloc of 256 B", v.malloc(t, 256), 256)
	add("a reservation without a hint", v.reserve(t, 2*g, 0), 2*g)
}
