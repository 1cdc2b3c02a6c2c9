package cudarttest

import (
	"slices"
	"sort"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// enterNoDevice enters call c, one of the virtual memory calls that name
// no device: they need a context all the same, so a lost device refuses
// them (anyLost), while a sticky error does not.
func (f *Fake) enterNoDevice(c calls.Call) *failure {
	if x := f.enter(c); x != nil {
		return x
	}
	return f.anyLost()
}

// maxReservation bounds one address reservation at 2^48 bytes, the virtual
// address space of current GPUs.
const maxReservation = 1 << 48

// MemGetAllocationGranularity is cuMemGetAllocationGranularity: the
// WithGranularity value, minimum and recommended alike.
func (f *Fake) MemGetAllocationGranularity(device int, recommended bool) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, x := f.granularity(device, 0)
	if x != nil {
		return 0, x.err(calls.CuMemGetAllocationGranularity, "(device %d, recommended %t)", device, recommended)
	}
	return g, nil
}

// MemGetExportableGranularity is cuMemGetAllocationGranularity for memory
// exportable as types: the WithGranularity value, as for memory that is
// not, for the types MemCreateExportable accepts.
func (f *Fake) MemGetExportableGranularity(device int, types cudart.HandleType, recommended bool) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, x := f.granularity(device, types)
	if x != nil {
		return 0, x.err(calls.CuMemGetAllocationGranularity, "(device %d, exportable as %s, recommended %t)", device, types, recommended)
	}
	return g, nil
}

func (f *Fake) granularity(device int, types cudart.HandleType) (uint64, *failure) {
	if x := f.check(calls.CuMemGetAllocationGranularity, device); x != nil {
		return 0, x
	}
	if x := exportable(types); x != nil {
		return 0, x
	}
	return f.opts.granularity, nil
}

// exportable refuses handle types the fake does not export as: it is a
// Linux host with no fabric (IMEX), where memory exports as a POSIX file
// descriptor only. A Win32 or fabric handle is
// CUDA_ERROR_NOT_SUPPORTED; bits cuda.h names no type for,
// CUDA_ERROR_INVALID_VALUE.
func exportable(types cudart.HandleType) *failure {
	const win32, win32KMT, fabric = 0x2, 0x4, 0x8
	switch {
	case types&^(cudart.HandleTypePOSIXFileDescriptor|win32|win32KMT|fabric) != 0:
		return invalid("requestedHandleTypes %s has bits no handle type has", types)
	case types&(win32|win32KMT|fabric) != 0:
		return fail(801, "requestedHandleTypes %s: the fake exports memory as a POSIX file descriptor only (a Linux host without fabric handles)", types)
	}
	return nil
}

// MemCreate is cuMemCreate: size bytes, a non-zero multiple of the
// granularity, counted against device until freed.
func (f *Fake) MemCreate(device int, size uint64) (cudart.PhysHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, x := f.memCreate(device, size, 0)
	if x != nil {
		return 0, x.err(calls.CuMemCreate, "(%s, device %d)", bytesize.Format(size), device)
	}
	return h, nil
}

// MemCreateExportable is cuMemCreate of memory exportable as types, which
// the fake records (a library's fake asks them through
// Library.Allocation): MemCreate's rules, and types the fake exports as
// (HandleTypePOSIXFileDescriptor).
func (f *Fake) MemCreateExportable(device int, size uint64, types cudart.HandleType) (cudart.PhysHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, x := f.memCreate(device, size, types)
	if x != nil {
		return 0, x.err(calls.CuMemCreate, "(%s, device %d, exportable as %s)", bytesize.Format(size), device, types)
	}
	return h, nil
}

func (f *Fake) memCreate(device int, size uint64, types cudart.HandleType) (cudart.PhysHandle, *failure) {
	if x := f.check(calls.CuMemCreate, device); x != nil {
		return 0, x
	}
	if x := exportable(types); x != nil {
		return 0, x
	}
	if x := f.granules("size", size, false); x != nil {
		return 0, x
	}
	if x := f.charge(device, size); x != nil {
		return 0, x
	}
	p := &physical{h: f.nextHandle, device: device, size: size, types: types, mem: sparse{size: size}, seq: f.birth()}
	f.nextHandle++
	f.phys[p.h] = p
	return p.h, nil
}

// MemRelease is cuMemRelease. The memory stays usable through existing
// mappings and is freed when the last is unmapped.
func (f *Fake) MemRelease(h cudart.PhysHandle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.enterNoDevice(calls.CuMemRelease); x != nil {
		return x.err(calls.CuMemRelease, "(%d)", uint64(h))
	}
	p, x := f.handle(h)
	if x != nil {
		return x.err(calls.CuMemRelease, "(%d)", uint64(h))
	}
	p.released = true
	f.collect(p)
	return nil
}

// MemAddressReserve is cuMemAddressReserve: size and alignment (0 for the
// granularity) are multiples of the granularity. A hint is honoured exactly
// when it is aligned, nothing lives in the hinted range and the range lies
// in the 2^48 bytes above the fake's first address. A hinted range that
// ends past them, where no GPU has addresses, is refused with
// CUDA_ERROR_OUT_OF_MEMORY, as CUDA 13.0 refuses one ending at 2^64 (measured
// on an H100); any other hint the range cannot take goes elsewhere, as
// CUDA's may.
func (f *Fake) MemAddressReserve(size, alignment uint64, hint cudart.DevicePtr) (cudart.DevicePtr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, x := f.reserve(size, alignment, uint64(hint))
	if x != nil {
		return 0, x.err(calls.CuMemAddressReserve, "(%s, alignment %s, hint %s)", bytesize.Format(size), bytesize.Format(alignment), hint)
	}
	return p, nil
}

func (f *Fake) reserve(size, alignment, hint uint64) (cudart.DevicePtr, *failure) {
	if x := f.enterNoDevice(calls.CuMemAddressReserve); x != nil {
		return 0, x
	}
	if x := f.granules("size", size, false); x != nil {
		return 0, x
	}
	if size > maxReservation {
		return 0, fail(2, "asked for %s of address space, more than the %s a GPU offers", bytesize.Format(size), bytesize.Format(maxReservation))
	}
	if alignment == 0 {
		alignment = f.opts.granularity
	}
	if !align.IsPowerOfTwo(alignment) {
		return 0, invalid("alignment %d is not a power of two", alignment)
	}
	alignment = max(alignment, f.opts.granularity)
	if hint >= spaceTop || (hint >= spaceBase && size > spaceTop-hint) {
		return 0, fail(2, "the hinted range [%#x, +%s) ends past the GPU's address space", hint, bytesize.Format(size))
	}
	base := hint
	if hint >= spaceBase && hint < spaceTop && size <= spaceTop-hint && align.Is(hint, alignment) && !f.overlaps(hint, size) {
		f.next = max(f.next, hint+size+guardGap)
	} else {
		var x *failure
		if base, x = f.place(size, alignment); x != nil {
			return 0, x
		}
	}
	r := &region{base: base, size: size, kind: kindReservation, seq: f.birth(), call: calls.CuMemAddressReserve}
	f.insert(r)
	return cudart.DevicePtr(r.base), nil
}

// MemAddressFree is cuMemAddressFree of a whole reservation. The fake
// requires it to be unmapped first.
func (f *Fake) MemAddressFree(p cudart.DevicePtr, size uint64) error {
	return f.onRange(calls.CuMemAddressFree, p, size, f.addressFree)
}

// onRange is call c on the range of size bytes at p, done by op under f's
// lock once c is entered; a failure is c's error, naming the range.
func (f *Fake) onRange(c calls.Call, p cudart.DevicePtr, size uint64, op func(a, size uint64) *failure) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.enterNoDevice(c)
	if x == nil {
		x = op(uint64(p), size)
	}
	if x != nil {
		return x.err(c, "(%s, %s)", p, bytesize.Format(size))
	}
	return nil
}

func (f *Fake) addressFree(a, size uint64) *failure {
	r, x := f.reservation(a, size)
	if x != nil {
		return x
	}
	switch {
	case r.base != a || r.size != size:
		return invalid("range [%s, +%s) is not the whole of %s", cudart.DevicePtr(a), bytesize.Format(size), r.describe())
	case len(r.maps) > 0:
		return invalid("%s still has %d mappings; unmap them first", r.describe(), len(r.maps))
	}
	f.release(r)
	return nil
}

// MemMap is cuMemMap: size bytes of h from offset, at p. Address, size and
// offset are multiples of the granularity; the range must be reserved, in
// one reservation, and not mapped; offset+size must fit in h.
func (f *Fake) MemMap(p cudart.DevicePtr, size, offset uint64, h cudart.PhysHandle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.memMap(uint64(p), size, offset, h); x != nil {
		return x.err(calls.CuMemMap, "(%s, %s, offset %s, handle %d)", p, bytesize.Format(size), bytesize.Format(offset), uint64(h))
	}
	return nil
}

func (f *Fake) memMap(a, size, offset uint64, h cudart.PhysHandle) *failure {
	if x := f.enterNoDevice(calls.CuMemMap); x != nil {
		return x
	}
	if x := f.granules("address", a, true); x != nil {
		return x
	}
	if x := f.granules("size", size, false); x != nil {
		return x
	}
	if x := f.granules("offset", offset, true); x != nil {
		return x
	}
	p, x := f.handle(h)
	if x != nil {
		return x
	}
	if offset > p.size || size > p.size-offset {
		return invalid("offset %s + size %s exceed %s", bytesize.Format(offset), bytesize.Format(size), p.describe())
	}
	r, x := f.reservation(a, size)
	if x != nil {
		return x
	}
	i := sort.Search(len(r.maps), func(i int) bool { return r.maps[i].end() > a })
	if i < len(r.maps) && r.maps[i].va < a+size {
		return invalid("range overlaps %s", r.maps[i].describe())
	}
	m := &mapping{va: a, size: size, phys: p, off: offset, seq: f.birth()}
	r.maps = slices.Insert(r.maps, i, m)
	p.maps++
	return nil
}

// MemUnmap is cuMemUnmap of whole mappings with no hole between. Physical
// memory released and no longer mapped is freed.
func (f *Fake) MemUnmap(p cudart.DevicePtr, size uint64) error {
	return f.onRange(calls.CuMemUnmap, p, size, f.unmap)
}

func (f *Fake) unmap(a, size uint64) *failure {
	r, i, j, x := f.wholeMappings(a, size)
	if x != nil {
		return x
	}
	for _, m := range r.maps[i:j] {
		m.phys.maps--
		f.collect(m.phys)
	}
	r.maps = slices.Delete(r.maps, i, j)
	return nil
}

// MemSetAccess is cuMemSetAccess: read-write access for each device listed
// to [p, p+size), which must be whole mappings with no hole between, as
// CUDA documents ("a fully mapped address range containing all
// allocations"). A device other than the memory's own must be able to
// access it (DeviceCanAccessPeer), or the call fails with
// cudaErrorInvalidDevice and grants nothing.
func (f *Fake) MemSetAccess(p cudart.DevicePtr, size uint64, devices []int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.setAccess(uint64(p), size, devices); x != nil {
		return x.err(calls.CuMemSetAccess, "(%s, %s, devices %v)", p, bytesize.Format(size), devices)
	}
	return nil
}

func (f *Fake) setAccess(a, size uint64, devices []int) *failure {
	if x := f.enterNoDevice(calls.CuMemSetAccess); x != nil {
		return x
	}
	if len(devices) == 0 {
		return invalid("no devices")
	}
	var bits uint64
	for _, d := range devices {
		if x := f.device(d); x != nil {
			return x
		}
		bits |= 1 << d
	}
	r, i, j, x := f.wholeMappings(a, size)
	if x != nil {
		return x
	}
	for _, m := range r.maps[i:j] {
		for _, d := range devices {
			if owner := m.phys.device; d != owner && f.opts.peers[d]&(1<<owner) == 0 {
				return fail(101, "device %d cannot access memory of device %d in %s (cudaDeviceCanAccessPeer is false; see WithPeerAccess)", d, owner, m.describe())
			}
		}
	}
	for _, m := range r.maps[i:j] {
		m.access |= bits
	}
	return nil
}
