package cudarttest

import (
	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// HostRegister is cudaHostRegister over all of b, counted against the
// pinning limit (WithHostMemory). cudaHostRegisterIoMemory, for the
// memory-mapped I/O of another device, is refused: the fake has only
// ordinary memory. A range that overlaps memory already registered or
// pinned fails with cudaErrorHostMemoryAlreadyRegistered (712). With
// HostRegisterMapped the memory gets a device address from
// HostGetDevicePointer that aliases b. The fake keeps b alive until
// HostUnregister.
func (f *Fake) HostRegister(device int, b []byte, flags cudart.HostRegisterFlags) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.hostRegister(device, b, flags); x != nil {
		return x.err(calls.HostRegister, "(%p, %s, %s)", b, bytesize.Format(uint64(len(b))), flags)
	}
	return nil
}

func (f *Fake) hostRegister(device int, b []byte, flags cudart.HostRegisterFlags) *failure {
	if x := f.check(calls.HostRegister, device); x != nil {
		return x
	}
	all := cudart.HostRegisterPortable | cudart.HostRegisterMapped | cudart.HostRegisterIoMemory | cudart.HostRegisterReadOnly
	if flags&^all != 0 {
		return invalid("unknown flags 0x%x", uint32(flags))
	}
	if len(b) == 0 {
		return invalid("empty range")
	}
	if flags&cudart.HostRegisterIoMemory != 0 {
		return invalid("cudaHostRegisterIoMemory is for memory-mapped I/O of a device, and this is ordinary memory")
	}
	a := addrOf(b)
	if h := f.overlapsHost(a, uintptr(len(b))); h != nil {
		return fail(712, "overlaps %s", h.describe())
	}
	var alias uint64
	if flags&cudart.HostRegisterMapped != 0 {
		var x *failure
		if alias, x = f.place(uint64(len(b)), align.CUDA); x != nil {
			return x
		}
	}
	if x := f.pin(uint64(len(b))); x != nil {
		return x
	}
	h := &hostRange{start: a, b: b, registered: true, regFlags: flags, device: device, seq: f.birth(), call: calls.HostRegister}
	if flags&cudart.HostRegisterMapped != 0 {
		f.mapIntoDevice(h, device, alias)
	}
	f.insertHost(h)
	return nil
}

// HostUnregister is cudaHostUnregister of the registered range that starts
// at b[0]; anything else fails with cudaErrorHostMemoryNotRegistered (713).
// It runs the device's queued work first, as CUDA synchronises, since that
// work may still copy to or from the range.
func (f *Fake) HostUnregister(device int, b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.hostUnregister(device, b); x != nil {
		return x.err(calls.HostUnregister, "(%p)", b)
	}
	return nil
}

func (f *Fake) hostUnregister(device int, b []byte) *failure {
	if x := f.check(calls.HostUnregister, device); x != nil {
		return x
	}
	if x := f.captureBlocksDeviceSync(device); x != nil {
		return x
	}
	if x := f.syncDevice(device); x != nil {
		return x
	}
	if len(b) == 0 {
		return invalid("empty range")
	}
	a := addrOf(b)
	h := f.containingHost(a)
	switch {
	case h == nil:
		return fail(713, "not registered")
	case !h.registered:
		return fail(713, "is %s, not registered memory", h.describe())
	case h.start != a:
		return fail(713, "is %d B inside %s, not its start", a-h.start, h.describe())
	}
	return f.dropHost(h)
}
