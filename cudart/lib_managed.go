package cudart

import (
	"fmt"

	"github.com/dustin/go-humanize"
)

// MallocManaged is cudaMallocManaged with device current.
func (l *Lib) MallocManaged(device int, size uint64, flags MemAttachFlags) (DevicePtr, error) {
	if l.closed.Load() {
		return 0, closedError("cudaMallocManaged")
	}
	r := l.be.mallocManaged(device, size, flags)
	if r.code != 0 {
		return 0, l.fail(r, "cudaMallocManaged(%s, %s) on device %d", humanize.Bytes(size), attachName(flags), device)
	}
	return DevicePtr(r.a), nil
}

// MemPrefetchAsync is cudaMemPrefetchAsync of n bytes at p to dstDevice
// (CPUDevice for host memory) on stream s, with device current.
//
// CUDA 13 changed the call's signature to take a cudaMemLocation and flags,
// which CUDA 12.2 to 12.9 offer as cudaMemPrefetchAsync_v2. Open picks the
// _v2 function where the runtime exports it, else the new signature from
// runtime version 13000 on, else the old one taking a device ordinal.
func (l *Lib) MemPrefetchAsync(device int, p DevicePtr, n uint64, dstDevice int, s Stream) error {
	if l.closed.Load() {
		return closedError("cudaMemPrefetchAsync")
	}
	if r := l.be.memPrefetchAsync(device, p, n, dstDevice, s); r.code != 0 {
		return l.fail(r, "cudaMemPrefetchAsync(%s, %s, to %s, stream 0x%x) on device %d", p, humanize.Bytes(n), destName(dstDevice), uintptr(s), device)
	}
	return nil
}

func attachName(f MemAttachFlags) string {
	switch f {
	case MemAttachGlobal:
		return "cudaMemAttachGlobal"
	case MemAttachHost:
		return "cudaMemAttachHost"
	}
	return fmt.Sprintf("flags 0x%x", uint32(f))
}

func destName(dev int) string {
	if dev == CPUDevice {
		return "CPU"
	}
	return fmt.Sprintf("device %d", dev)
}
