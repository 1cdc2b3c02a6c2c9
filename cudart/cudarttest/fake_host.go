package cudarttest

import (
	"fmt"
	"slices"
	"sort"
	"unsafe"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
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
	seq        int
	call       callID
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
	return fmt.Sprintf("%s 0x%x (%s) from %s (call #%d)", what, h.start, human(uint64(len(h.b))), h.call, h.seq)
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// MallocHost is cudaMallocHost: pinned host memory, lazily backed, counted
// against WithHostMemory. Size 0 returns nil and no error.
func (f *Fake) MallocHost(device int, size uint64) (unsafe.Pointer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, x := f.hostAlloc(callMallocHost, device, size, cudart.HostAllocDefault)
	if x != nil {
		return nil, x.err("cudaMallocHost(%s)", human(size))
	}
	return p, nil
}

// HostAlloc is cudaHostAlloc. Mapped memory gets a device address, from
// HostGetDevicePointer, through which device calls read and write the same
// bytes; Portable and WriteCombined are recorded (HostAllocFlags) and change
// nothing else.
func (f *Fake) HostAlloc(device int, size uint64, flags cudart.HostAllocFlags) (unsafe.Pointer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, x := f.hostAlloc(callHostAlloc, device, size, flags)
	if x != nil {
		return nil, x.err("cudaHostAlloc(%s, %s)", human(size), flags)
	}
	return p, nil
}

func (f *Fake) hostAlloc(c callID, device int, size uint64, flags cudart.HostAllocFlags) (unsafe.Pointer, *failure) {
	if x := f.check(c, device); x != nil {
		return nil, x
	}
	if flags&^(cudart.HostAllocPortable|cudart.HostAllocMapped|cudart.HostAllocWriteCombined) != 0 {
		return nil, invalid("unknown flags 0x%x", uint32(flags))
	}
	if size == 0 {
		return nil, nil
	}
	if free := f.opts.hostMem - f.hostUsed; size > free {
		return nil, fail(2, "asked for %s of pinned host memory, %s free of %s", human(size), human(free), human(f.opts.hostMem))
	}
	m, err := mapHost(size)
	if err != nil {
		return nil, fail(2, "mmap of %s: %v", human(size), err)
	}
	h := &hostRange{start: uintptrOf(m), b: m[:size:size], mapping: m, allocFlags: flags, seq: f.seq, call: c}
	if flags&cudart.HostAllocMapped != 0 {
		f.mapIntoDevice(h, device)
	}
	f.hostUsed += size
	f.insertHost(h)
	return unsafe.Pointer(unsafe.SliceData(m)), nil
}

// mapIntoDevice gives h a device address range that aliases its bytes.
func (f *Fake) mapIntoDevice(h *hostRange, device int) {
	size := uint64(len(h.b))
	h.alias = &region{
		base:   f.place(size, align.CUDA),
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

// FreeHost is cudaFreeHost of memory from MallocHost or HostAlloc; nil is a
// no-op. Anything else (registered memory, an interior pointer, memory freed
// already) fails with cudaErrorInvalidValue.
func (f *Fake) FreeHost(p unsafe.Pointer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.enter(callFreeHost); x != nil {
		return x.err("cudaFreeHost(%p)", p)
	}
	if p == nil {
		return nil
	}
	a := uintptr(p)
	h := f.containingHost(a)
	switch {
	case h == nil:
		return invalid("%p is not pinned host memory from cudaMallocHost or cudaHostAlloc", p).err("cudaFreeHost(%p)", p)
	case h.registered:
		return invalid("%p is %s; unregister it with cudaHostUnregister", p, h.describe()).err("cudaFreeHost(%p)", p)
	case h.start != a:
		return invalid("%p is %d B inside %s, not its start", p, a-h.start, h.describe()).err("cudaFreeHost(%p)", p)
	}
	if err := unmapHost(h.mapping); err != nil {
		return fail(999, "munmap: %v", err).err("cudaFreeHost(%p)", p)
	}
	f.hostUsed -= uint64(len(h.b))
	f.dropHost(h)
	return nil
}

// HostGetDevicePointer is cudaHostGetDevicePointer: the device address of p
// in mapped host memory (HostAllocMapped, HostRegisterMapped). Pointers
// inside the memory map to the same offset. Unmapped memory has none:
// cudaErrorInvalidValue.
func (f *Fake) HostGetDevicePointer(device int, p unsafe.Pointer) (cudart.DevicePtr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(callHostGetDevicePointer, device); x != nil {
		return 0, x.err("cudaHostGetDevicePointer(%p)", p)
	}
	h := f.containingHost(uintptr(p))
	switch {
	case h == nil:
		return 0, invalid("%p is not pinned or registered host memory", p).err("cudaHostGetDevicePointer(%p)", p)
	case h.alias == nil:
		return 0, invalid("%p is %s, which is not mapped into the device", p, h.describe()).err("cudaHostGetDevicePointer(%p)", p)
	}
	return cudart.DevicePtr(h.alias.base + uint64(uintptr(p)-h.start)), nil
}

// HostAllocFlags reports the flags HostAlloc was given for the memory that
// contains p; ok is false when p is not pinned host memory.
func (f *Fake) HostAllocFlags(p unsafe.Pointer) (flags cudart.HostAllocFlags, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.containingHost(uintptr(p))
	if h == nil || h.registered {
		return 0, false
	}
	return h.allocFlags, true
}

// HostRegisterFlags reports the flags HostRegister was given for the
// registered memory that contains p; ok is false when p is not registered.
func (f *Fake) HostRegisterFlags(p unsafe.Pointer) (flags cudart.HostRegisterFlags, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.containingHost(uintptr(p))
	if h == nil || !h.registered {
		return 0, false
	}
	return h.regFlags, true
}

func (f *Fake) insertHost(h *hostRange) {
	i := sort.Search(len(f.hosts), func(i int) bool { return f.hosts[i].start > h.start })
	f.hosts = slices.Insert(f.hosts, i, h)
}

// dropHost forgets h and the device range that mapped it.
func (f *Fake) dropHost(h *hostRange) {
	i := sort.Search(len(f.hosts), func(i int) bool { return f.hosts[i].start >= h.start })
	if i < len(f.hosts) && f.hosts[i] == h {
		f.hosts = slices.Delete(f.hosts, i, i+1)
	}
	if h.alias != nil {
		f.release(h.alias)
	}
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
