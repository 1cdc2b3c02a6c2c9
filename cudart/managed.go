package cudart

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/enum"
)

// MallocManaged is cudaMallocManaged with device current.
func (l *library) MallocManaged(device int, size uint64, flags MemAttachFlags) (DevicePtr, error) {
	r := l.call(calls.MallocManaged, device, uintptr(size), uintptr(flags))
	if r.code != 0 {
		return 0, l.fail(calls.MallocManaged, r, "(%s, %s) on device %d", bytesize.Format(size), attachFlags.Name(flags), device)
	}
	return DevicePtr(r.a), nil
}

// MemPrefetchAsync is cudaMemPrefetchAsync of n bytes at p to dstDevice
// (CPUDevice for host memory) on stream s, with device current.
//
// CUDA 13 changed the call's signature to take a cudaMemLocation and flags,
// which CUDA 12.2 to 12.9 offer as cudaMemPrefetchAsync_v2. Open picks the
// _v2 function where the runtime exports it, else the new signature from
// runtime version 13000 on, else the old one taking a device ordinal, whose
// four arguments are the first four registers of the new one's five.
func (l *library) MemPrefetchAsync(device int, p DevicePtr, n uint64, dstDevice int, s Stream) error {
	if l.unusable() {
		return closedError(calls.MemPrefetchAsync)
	}
	var r ret
	if l.prefetchLocation {
		r = l.call(calls.MemPrefetchAsync, device, uintptr(p), uintptr(n), locationOf(dstDevice).word(), 0, uintptr(s))
	} else {
		r = l.call(calls.MemPrefetchAsync, device, uintptr(p), uintptr(n), cint(dstDevice), uintptr(s))
	}
	if r.code != 0 {
		return l.fail(calls.MemPrefetchAsync, r, "(%s, %s, to %s, stream 0x%x) on device %d", p, bytesize.Format(n), destName(dstDevice), uintptr(s), device)
	}
	return nil
}

var attachFlags = enum.Table[MemAttachFlags]{Prefix: "cudaMemAttach", Names: []string{MemAttachGlobal: "Global", MemAttachHost: "Host"}, Unknown: "flags 0x%x"}

func destName(dev int) string {
	if dev == CPUDevice {
		return "CPU"
	}
	return fmt.Sprintf("device %d", dev)
}
