package cudarttest

import (
	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// DeviceCount is cudaGetDeviceCount: the number of devices of WithDevices;
// with none, cudaErrorNoDevice, as CUDA returns.
func (f *Fake) DeviceCount() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.enter(calls.GetDeviceCount); x != nil {
		return 0, x.err(calls.GetDeviceCount, "()")
	}
	if len(f.devs) == 0 {
		return 0, fail(100, "the fake has no device (WithDevices(0))").err(calls.GetDeviceCount, "()")
	}
	return len(f.devs), nil
}

// MemGetInfo is cudaMemGetInfo. Free memory is what device, managed,
// stream-ordered and virtual memory physical allocations leave of the total.
func (f *Fake) MemGetInfo(device int) (free, total uint64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(calls.MemGetInfo, device); x != nil {
		return 0, 0, x.err(calls.MemGetInfo, "(device %d)", device)
	}
	return f.opts.deviceMem - f.devs[device].used, f.opts.deviceMem, nil
}

// Malloc is cudaMalloc: 256-byte-aligned device memory, counted against the
// device and backed only where written. Size 0 returns a zero pointer and no
// error, as CUDA does. During a global or thread-local capture it is
// refused, as CUDA refuses it, and the capture is invalidated.
func (f *Fake) Malloc(device int, size uint64) (cudart.DevicePtr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, x := f.alloc(calls.Malloc, kindDevice, device, size)
	if x != nil {
		return 0, x.err(calls.Malloc, "(%s)", bytesize.Format(size))
	}
	return p, nil
}

// Free is cudaFree of device, managed or stream-ordered memory. It
// synchronises the device first, as CUDA does, so that no queued work
// outlives the memory; while a stream of the device captures it is refused
// as cudaDeviceSynchronize is. A zero pointer frees nothing; any other pointer must
// be the start of a live allocation of those kinds, or Free fails with
// cudaErrorInvalidValue; memory from device-side malloc too, which only a
// kernel's free gives back to the heap.
func (f *Fake) Free(device int, p cudart.DevicePtr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(calls.Free, device); x != nil {
		return x.err(calls.Free, "(%s)", p)
	}
	if x := f.captureBlocksDeviceSync(device); x != nil {
		return x.err(calls.Free, "(%s)", p)
	}
	if x := f.syncDevice(device); x != nil {
		return x.err(calls.Free, "(%s)", p)
	}
	if p == 0 {
		return nil
	}
	if r := f.containing(uint64(p)); r != nil && r.base == uint64(p) && r.call == calls.CuLaunchKernel {
		return invalid("%s is from device-side malloc; a kernel's free gives it back", p).err(calls.Free, "(%s)", p)
	}
	if x := f.free(p, kindDevice, kindManaged, kindAsync); x != nil {
		return x.err(calls.Free, "(%s)", p)
	}
	return nil
}

// DeviceSynchronize is cudaDeviceSynchronize: the work queued on every
// stream of device runs, in issue order. A fault of that work is returned,
// and sticky.
func (f *Fake) DeviceSynchronize(device int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(calls.DeviceSynchronize, device)
	if x == nil {
		x = f.captureBlocksDeviceSync(device)
	}
	if x == nil {
		x = f.syncDevice(device)
	}
	if x != nil {
		return x.err(calls.DeviceSynchronize, "(device %d)", device)
	}
	return nil
}

// check enters call c and checks the device ordinal it names, and that the
// device is neither lost nor poisoned by a sticky error.
func (f *Fake) check(c calls.Call, device int) *failure {
	if x := f.enterOn(c, device); x != nil {
		return x
	}
	return f.broken(device)
}

// enterOn enters call c and checks the device ordinal it names: check for
// the calls that need no context on the device, which work on one that is
// lost or broken.
func (f *Fake) enterOn(c calls.Call, device int) *failure {
	if x := f.enter(c); x != nil {
		return x
	}
	return f.device(device)
}

// broken is the error every call that needs device's context returns: the
// device lost, or its sticky error; nil when it works.
func (f *Fake) broken(device int) *failure {
	ds := &f.devs[device]
	if ds.lost != nil {
		return ds.lost
	}
	return ds.sticky
}

// anyLost is the error of a call that names no device but needs a context:
// CUDA documents a fatal fault as leaving the whole process unusable, and
// the fake cannot tell which device's context the call would run in, so
// one lost device refuses it.
func (f *Fake) anyLost() *failure {
	for d := range f.devs {
		if x := f.devs[d].lost; x != nil {
			return x
		}
	}
	return nil
}

// alloc makes a device address range of size bytes of kind k, charged to
// device, for call c. Size 0 gives the zero pointer.
func (f *Fake) alloc(c calls.Call, k kind, device int, size uint64) (cudart.DevicePtr, *failure) {
	if x := f.check(c, device); x != nil {
		return 0, x
	}
	if c == calls.Malloc {
		if x := f.captureForbidsUnsafe(c); x != nil {
			return 0, x
		}
	}
	if size == 0 {
		return 0, nil
	}
	return f.newRegion(c, k, device, size)
}

// newRegion places a range of size bytes of kind k on device and charges it
// as CUDA does (chargeAlloc): cudaMalloc's small allocations share 2 MiB
// chunks, cudaMallocAsync's 32 MiB segments; managed memory takes
// whole 2 MiB pages; device-side malloc (a launch's) takes nothing more, as
// it draws on the malloc heap the device already holds.
func (f *Fake) newRegion(c calls.Call, k kind, device int, size uint64) (cudart.DevicePtr, *failure) {
	var slot *chunkSlot
	var charge uint64
	switch {
	case c == calls.CuLaunchKernel:
	case k == kindDevice || k == kindAsync:
		var x *failure
		if slot, charge, x = f.chargeAlloc(device, f.devs[device].chunks(k), size); x != nil {
			return 0, x
		}
	default:
		var err error
		if charge, err = align.Up(size, chunkBytes); err != nil {
			return 0, fail(2, "asked for %s, more than any device holds", bytesize.Format(size))
		}
		if x := f.charge(device, charge); x != nil {
			return 0, x
		}
	}
	base, x := f.place(size, align.CUDA)
	if x != nil {
		f.uncharge(device, charge, slot)
		return 0, x
	}
	r := &region{
		base:   base,
		size:   size,
		kind:   k,
		device: device,
		seq:    f.birth(),
		call:   c,
		charge: charge,
		slot:   slot,
	}
	r.store.size = size
	r.mem = &r.store
	f.insert(r)
	return cudart.DevicePtr(r.base), nil
}

// free releases the allocation that starts at p, which must be of one of
// the kinds allowed.
func (f *Fake) free(p cudart.DevicePtr, allowed ...kind) *failure {
	a := uint64(p)
	i, ok := f.index(a)
	if !ok {
		if _, was := f.freed[a]; was {
			return invalid("%s was already freed", p)
		}
		if r := f.containing(a); r != nil {
			return invalid("%s is %s inside %s, not its start", p, bytesize.Format(a-r.base), r.describe())
		}
		return invalid("%s was never allocated", p)
	}
	r := f.regions[i]
	if r.freeQueued {
		return invalid("%s is freed already by a cudaFreeAsync still queued", p)
	}
	for _, k := range allowed {
		if r.kind == k {
			f.release(r)
			return nil
		}
	}
	return invalid("%s is %s; %s", p, r.describe(), freeHint[r.kind])
}

var freeHint = [...]string{
	kindDevice:      "free it with cudaFree",
	kindManaged:     "free it with cudaFree",
	kindAsync:       "free it with cudaFreeAsync or cudaFree",
	kindHostAlias:   "free the host memory with cudaFreeHost or cudaHostUnregister",
	kindReservation: "unmap it with cuMemUnmap and free it with cuMemAddressFree",
}

// release removes r from the address space and uncharges its device.
func (f *Fake) release(r *region) {
	f.remove(r)
	f.freed[r.base] = struct{}{}
	f.uncharge(r.device, r.charge, r.slot)
}

// uncharge gives device back what newRegion charged it: charge bytes, and
// slot's chunk when slot was its last use.
func (f *Fake) uncharge(device int, charge uint64, slot *chunkSlot) {
	f.devs[device].used -= charge
	if slot != nil && slot.release() {
		f.devs[device].used -= slot.pool.unit
	}
}

// Memcpy is cudaMemcpy. Device ends must lie wholly inside one live
// allocation; the kind must match the ends (Default infers it); dst and src
// must have the same length; host ends must not overlap, which CUDA leaves
// undefined. On failure nothing is written. A copy from device to device is
// queued on the legacy default stream, as CUDA returns before it is done;
// any other waits for the device's queued work and is done when Memcpy
// returns.
func (f *Fake) Memcpy(device int, dst, src cudart.Mem, kind cudart.MemcpyKind) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(calls.Memcpy, device)
	if x == nil {
		x = f.captureBlocksSync(device, legacyStream)
	}
	if x == nil {
		x = f.memcpy(device, dst, src, kind, false)
	}
	if x == nil && !dst.IsHost() && !src.IsHost() {
		x = f.enqueue(device, legacyStream, calls.Memcpy, func() *failure { return f.memcpy(device, dst, src, kind, true) })
	} else if x == nil {
		if x = f.syncDevice(device); x == nil {
			x = f.memcpy(device, dst, src, kind, true)
		}
	}
	if x != nil {
		return x.err(calls.Memcpy, "(%s <- %s, %s)", dst, src, kind)
	}
	return nil
}

// Memset is cudaMemset: n bytes at p, which must lie in one live
// allocation, set to value. As in CUDA, it is queued on the legacy default
// stream, unless p is mapped host memory or managed memory, which it sets
// after the device's queued work and before it returns.
func (f *Fake) Memset(device int, p cudart.DevicePtr, value byte, n uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(calls.Memset, device)
	if x == nil {
		x = f.memset(device, p, value, n, false)
	}
	if r := f.containing(uint64(p)); x == nil && r != nil && (r.kind == kindHostAlias || r.kind == kindManaged) {
		if x = f.captureBlocksSync(device, legacyStream); x == nil {
			x = f.syncDevice(device)
		}
		if x == nil {
			x = f.memset(device, p, value, n, true)
		}
	} else if x == nil {
		x = f.enqueue(device, legacyStream, calls.Memset, func() *failure { return f.memset(device, p, value, n, true) })
	}
	if x != nil {
		return x.err(calls.Memset, "(%s, 0x%02x, %s)", p, value, bytesize.Exact(n))
	}
	return nil
}

// MallocHost is cudaMallocHost: pinned host memory, lazily backed, counted
// against the pinning limit (WithHostMemory). Size 0 returns nil and no error.
func (f *Fake) MallocHost(device int, size uint64) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, x := f.hostAlloc(calls.MallocHost, device, size, cudart.HostAllocDefault)
	if x != nil {
		return nil, x.err(calls.MallocHost, "(%s)", bytesize.Format(size))
	}
	return p, nil
}

// FreeHost is cudaFreeHost of memory from MallocHost or HostAlloc, named by
// its first byte, after the work queued on every device, as CUDA
// synchronises, and refused as cudaDeviceSynchronize is while a stream
// captures; an empty slice frees nothing. Anything else (registered
// memory, an interior slice, memory freed already) fails with
// cudaErrorInvalidValue.
func (f *Fake) FreeHost(b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	const args = "(%#x)"
	a := addrOf(b)
	x := f.enter(calls.FreeHost)
	if x == nil {
		x = f.anyLost()
	}
	if x != nil {
		return x.err(calls.FreeHost, args, a)
	}
	for d := range f.devs {
		if x := f.captureBlocksDeviceSync(d); x != nil {
			return x.err(calls.FreeHost, args, a)
		}
		if x := f.syncDevice(d); x != nil {
			return x.err(calls.FreeHost, args, a)
		}
	}
	if len(b) == 0 {
		return nil
	}
	h := f.containingHost(a)
	switch {
	case h == nil:
		return invalid("%#x is not pinned host memory from cudaMallocHost or cudaHostAlloc", a).err(calls.FreeHost, args, a)
	case h.registered:
		return invalid("%#x is %s; unregister it with cudaHostUnregister", a, h.describe()).err(calls.FreeHost, args, a)
	case h.start != a:
		return invalid("%#x is %d B inside %s, not its start", a, a-h.start, h.describe()).err(calls.FreeHost, args, a)
	}
	if x := f.dropHost(h); x != nil {
		return x.err(calls.FreeHost, args, a)
	}
	return nil
}
