package cudarttest

import (
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// hostRange is pinned host memory (MallocHost, HostAlloc) or memory the
// caller registered (HostRegister).
type hostRange struct {
	start      uintptr
	b          []byte // what the caller sees
	mapping    []byte // the whole mapping to unmap; nil when registered
	registered bool
	allocFlags cudart.HostAllocFlags
	regFlags   cudart.HostRegisterFlags
	alias      *region // the device range that maps it, when mapped
	device     int     // the device whose context pinned it
	seq        int
	call       calls.Call
}

func (h *hostRange) end() uintptr { return h.start + uintptr(len(h.b)) }

func (h *hostRange) describe() string {
	what := "pinned host memory"
	switch {
	case h.registered:
		what = "registered host memory (" + h.regFlags.String() + ")"
	case h.allocFlags != 0:
		what = "pinned host memory (" + h.allocFlags.String() + ")"
	}
	return fmt.Sprintf("%s 0x%x (%s) from %s (call #%d)", what, h.start, bytesize.Format(uint64(len(h.b))), h.call, h.seq)
}

// addrOf is the address of b's first byte, 0 for a slice with no memory.
// Reflection tells it without unsafe, which stays in the binding.
func addrOf(b []byte) uintptr { return reflect.ValueOf(b).Pointer() }

// HostAlloc is cudaHostAlloc. Mapped memory gets a device address, from
// HostGetDevicePointer, through which device calls read and write the same
// bytes; Portable and WriteCombined are recorded (HostAllocFlags) and change
// nothing else.
func (f *Fake) HostAlloc(device int, size uint64, flags cudart.HostAllocFlags) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, x := f.hostAlloc(calls.HostAlloc, device, size, flags)
	if x != nil {
		return nil, x.err(calls.HostAlloc, "(%s, %s)", bytesize.Format(size), flags)
	}
	return p, nil
}

func (f *Fake) hostAlloc(c calls.Call, device int, size uint64, flags cudart.HostAllocFlags) ([]byte, *failure) {
	if x := f.check(c, device); x != nil {
		return nil, x
	}
	if flags&^(cudart.HostAllocPortable|cudart.HostAllocMapped|cudart.HostAllocWriteCombined) != 0 {
		return nil, invalid("unknown flags 0x%x", uint32(flags))
	}
	if size == 0 {
		return nil, nil
	}
	var alias uint64
	if flags&cudart.HostAllocMapped != 0 {
		var x *failure
		if alias, x = f.place(size, align.CUDA); x != nil {
			return nil, x
		}
	}
	if x := f.pin(size); x != nil {
		return nil, x
	}
	m, err := mapHost(size)
	if err != nil {
		return nil, fail(2, "mmap of %s: %v", bytesize.Format(size), err)
	}
	h := &hostRange{start: addrOf(m), b: m[:size:size], mapping: m, allocFlags: flags, device: device, seq: f.birth(), call: c}
	if flags&cudart.HostAllocMapped != 0 {
		f.mapIntoDevice(h, device, alias)
	}
	f.insertHost(h)
	return h.b, nil
}

// pin counts size bytes against the pinning limit (WithHostMemory).
func (f *Fake) pin(size uint64) *failure {
	if free := f.opts.hostMem - f.hostUsed; size > free {
		return fail(2, "asked to pin %s of host memory, %s left of the %s the host may pin (WithHostMemory)", bytesize.Format(size), bytesize.Format(free), bytesize.Format(f.opts.hostMem))
	}
	f.hostUsed += size
	return nil
}

// mapIntoDevice gives h the device address range at base, from place, that
// aliases its bytes.
func (f *Fake) mapIntoDevice(h *hostRange, device int, base uint64) {
	size := uint64(len(h.b))
	h.alias = &region{
		base:   base,
		size:   size,
		kind:   kindHostAlias,
		device: device,
		seq:    h.seq,
		call:   h.call,
		mem:    hostBytes(h.b),
		host:   h,
	}
	f.insert(h.alias)
}

// HostGetDevicePointer is cudaHostGetDevicePointer: the device address of
// b[0] in mapped host memory (HostAllocMapped, HostRegisterMapped). Slices
// inside the memory map to the same offset. Unmapped memory has none:
// cudaErrorInvalidValue.
func (f *Fake) HostGetDevicePointer(device int, b []byte) (cudart.DevicePtr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	const args = "(%#x)"
	a := addrOf(b)
	if x := f.check(calls.HostGetDevicePointer, device); x != nil {
		return 0, x.err(calls.HostGetDevicePointer, args, a)
	}
	h := f.containingHost(a)
	switch {
	case len(b) == 0 || h == nil:
		return 0, invalid("%#x is not pinned or registered host memory", a).err(calls.HostGetDevicePointer, args, a)
	case h.alias == nil:
		return 0, invalid("%#x is %s, which is not mapped into the device", a, h.describe()).err(calls.HostGetDevicePointer, args, a)
	}
	return cudart.DevicePtr(h.alias.base + uint64(a-h.start)), nil
}

func (f *Fake) insertHost(h *hostRange) {
	i := sort.Search(len(f.hosts), func(i int) bool { return f.hosts[i].start > h.start })
	f.hosts = slices.Insert(f.hosts, i, h)
}

// dropHost unpins h, unmaps it when the fake mapped it, and forgets it and
// the device range that mapped it.
func (f *Fake) dropHost(h *hostRange) *failure {
	if h.mapping != nil {
		if err := unmapHost(h.mapping); err != nil {
			return fail(999, "munmap: %v", err)
		}
	}
	f.hostUsed -= uint64(len(h.b))
	i := sort.Search(len(f.hosts), func(i int) bool { return f.hosts[i].start >= h.start })
	if i < len(f.hosts) && f.hosts[i] == h {
		f.hosts = slices.Delete(f.hosts, i, i+1)
	}
	if h.alias != nil {
		f.release(h.alias)
	}
	return nil
}

// containingHost returns the host range that holds address a, or nil.
func (f *Fake) containingHost(a uintptr) *hostRange {
	i := sort.Search(len(f.hosts), func(i int) bool { return f.hosts[i].start > a })
	if i == 0 || a >= f.hosts[i-1].end() {
		return nil
	}
	return f.hosts[i-1]
}

// overlapsHost returns a host range that intersects [a, a+n), or nil.
func (f *Fake) overlapsHost(a, n uintptr) *hostRange {
	i := sort.Search(len(f.hosts), func(i int) bool { return f.hosts[i].end() > a })
	if i < len(f.hosts) && f.hosts[i].start < a+n {
		return f.hosts[i]
	}
	return nil
}

// GetDeviceFlags is cudaGetDeviceFlags: cudart.DeviceMapHost until set, as
// on a device with unified addressing.
func (f *Fake) GetDeviceFlags(device int) (cudart.DeviceFlags, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(calls.GetDeviceFlags, device); x != nil {
		return 0, x.err(calls.GetDeviceFlags, "(device %d)", device)
	}
	return f.devs[device].flags, nil
}

// SetDeviceFlags is cudaSetDeviceFlags. Bits CUDA does not define, or more
// than one scheduling policy, fail with cudaErrorInvalidValue.
func (f *Fake) SetDeviceFlags(device int, flags cudart.DeviceFlags) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(calls.SetDeviceFlags, device)
	if x == nil && flags&^knownFlagsMask != 0 {
		x = invalid("bits 0x%x are no cudaDeviceFlags", uint32(flags&^knownFlagsMask))
	}
	if sched := flags & scheduleMask; x == nil && sched&(sched-1) != 0 {
		x = invalid("scheduling bits 0x%x name more than one policy", uint32(sched))
	}
	if x != nil {
		return x.err(calls.SetDeviceFlags, "(device %d, 0x%x)", device, uint32(flags))
	}
	f.devs[device].flags = flags
	return nil
}
