package cudarttest

import (
	"sort"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// invalidDeviceID is cudaInvalidDeviceId, the device the fake gives memory
// CUDA does not know.
const invalidDeviceID = -2

// PointerAttributes is cudaPointerGetAttributes of p with device selected.
// Device memory (Malloc, MallocAsync, and virtual memory mapped by MemMap)
// is cudaMemoryTypeDevice, on its device, with no host address, and a
// device address only where device may access it; managed memory is
// cudaMemoryTypeManaged, at the same address for the host and the devices;
// pinned and registered host memory is cudaMemoryTypeHost, asked at its
// host address or its device alias, with the device whose context pinned
// it, its host address, and its alias if mapped (the fake maps only
// HostAllocMapped and HostRegisterMapped memory, where CUDA maps all of it
// on a 64-bit host). Any other address, freed memory included, is
// cudaMemoryTypeUnregistered, as CUDA 11 and later answer for host memory
// they do not know: its device is cudaInvalidDeviceId (-2) and its host
// address p. A reserved address that is not mapped fails with
// cudaErrorInvalidValue.
func (f *Fake) PointerAttributes(device int, p cudart.DevicePtr) (cudart.PointerAttributes, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(calls.PointerGetAttributes, device); x != nil {
		return cudart.PointerAttributes{}, x.err(calls.PointerGetAttributes, "(%s) on device %d", p, device)
	}
	at, x := f.pointerAttributes(device, uint64(p))
	if x != nil {
		return cudart.PointerAttributes{}, x.err(calls.PointerGetAttributes, "(%s) on device %d", p, device)
	}
	return at, nil
}

func (f *Fake) pointerAttributes(device int, a uint64) (cudart.PointerAttributes, *failure) {
	if h := f.containingHost(uintptr(a)); h != nil {
		at := cudart.PointerAttributes{Type: cudart.MemoryHost, Device: h.device, HostPointer: uintptr(a)}
		if h.alias != nil {
			at.DevicePointer = cudart.DevicePtr(h.alias.base + uint64(uintptr(a)-h.start))
		}
		return at, nil
	}
	r := f.containing(a)
	if r == nil {
		return cudart.PointerAttributes{Type: cudart.MemoryUnregistered, Device: invalidDeviceID, HostPointer: uintptr(a)}, nil
	}
	p := cudart.DevicePtr(a)
	switch r.kind {
	case kindManaged:
		return cudart.PointerAttributes{Type: cudart.MemoryManaged, Device: r.device, DevicePointer: p, HostPointer: uintptr(a)}, nil
	case kindHostAlias:
		return cudart.PointerAttributes{Type: cudart.MemoryHost, Device: r.host.device, DevicePointer: p, HostPointer: r.host.start + uintptr(a-r.base)}, nil
	case kindReservation:
		i := sort.Search(len(r.maps), func(i int) bool { return r.maps[i].end() > a })
		if i == len(r.maps) || r.maps[i].va > a {
			return cudart.PointerAttributes{}, invalid("%s is reserved (%s) but not mapped", p, r.describe())
		}
		m := r.maps[i]
		at := cudart.PointerAttributes{Type: cudart.MemoryDevice, Device: m.phys.device}
		if m.access&(1<<device) != 0 {
			at.DevicePointer = p
		}
		return at, nil
	}
	return cudart.PointerAttributes{Type: cudart.MemoryDevice, Device: r.device, DevicePointer: p}, nil
}
