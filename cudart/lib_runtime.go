package cudart

import (
	"fmt"
	"unsafe"

	"github.com/dustin/go-humanize"
)

// DeviceCount is cudaGetDeviceCount.
func (l *Lib) DeviceCount() (int, error) {
	if l.closed.Load() {
		return 0, closedError("cudaGetDeviceCount")
	}
	r := l.be.deviceCount()
	if r.code != 0 {
		return 0, l.fail(r, "cudaGetDeviceCount()")
	}
	return int(r.a), nil
}

// MemGetInfo is cudaMemGetInfo on device.
func (l *Lib) MemGetInfo(device int) (free, total uint64, err error) {
	if l.closed.Load() {
		return 0, 0, closedError("cudaMemGetInfo")
	}
	r := l.be.memGetInfo(device)
	if r.code != 0 {
		return 0, 0, l.fail(r, "cudaMemGetInfo() on device %d", device)
	}
	return r.a, r.b, nil
}

// Malloc is cudaMalloc on device.
func (l *Lib) Malloc(device int, size uint64) (DevicePtr, error) {
	if l.closed.Load() {
		return 0, closedError("cudaMalloc")
	}
	r := l.be.malloc(device, size)
	if r.code != 0 {
		return 0, l.fail(r, "cudaMalloc(%s) on device %d", humanize.Bytes(size), device)
	}
	return DevicePtr(r.a), nil
}

// Free is cudaFree on device.
func (l *Lib) Free(device int, p DevicePtr) error {
	if l.closed.Load() {
		return closedError("cudaFree")
	}
	if r := l.be.free(device, p); r.code != 0 {
		return l.fail(r, "cudaFree(%s) on device %d", p, device)
	}
	return nil
}

// MallocHost is cudaMallocHost with device current.
func (l *Lib) MallocHost(device int, size uint64) (unsafe.Pointer, error) {
	if l.closed.Load() {
		return nil, closedError("cudaMallocHost")
	}
	r := l.be.mallocHost(device, size)
	if r.code != 0 {
		return nil, l.fail(r, "cudaMallocHost(%s) on device %d", humanize.Bytes(size), device)
	}
	return r.p, nil
}

// FreeHost is cudaFreeHost.
func (l *Lib) FreeHost(p unsafe.Pointer) error {
	if l.closed.Load() {
		return closedError("cudaFreeHost")
	}
	if r := l.be.freeHost(p); r.code != 0 {
		return l.fail(r, "cudaFreeHost(%p)", p)
	}
	return nil
}

// Memcpy is cudaMemcpy on device. dst and src must have the same length and
// sit on the sides kind names (Default accepts either); a copy of zero bytes
// does nothing.
func (l *Lib) Memcpy(device int, dst, src Mem, kind MemcpyKind) error {
	if l.closed.Load() {
		return closedError("cudaMemcpy")
	}
	if dst.n != src.n || dst.n == 0 || !kindFits(dst, src, kind) {
		return checkCopy("cudaMemcpy", device, dst, src, kind)
	}
	if r := l.be.memcpy(device, dst, src, kind); r.code != 0 {
		return l.fail(r, "cudaMemcpy(%s, %s, %s, %s) on device %d", dst, src, humanize.Bytes(dst.n), kind, device)
	}
	return nil
}

// Memset is cudaMemset on device: n bytes at p set to value.
func (l *Lib) Memset(device int, p DevicePtr, value byte, n uint64) error {
	if l.closed.Load() {
		return closedError("cudaMemset")
	}
	if r := l.be.memset(device, p, value, n); r.code != 0 {
		return l.fail(r, "cudaMemset(%s, %d, %s) on device %d", p, value, humanize.Bytes(n), device)
	}
	return nil
}

// DeviceSynchronize is cudaDeviceSynchronize on device.
func (l *Lib) DeviceSynchronize(device int) error {
	if l.closed.Load() {
		return closedError("cudaDeviceSynchronize")
	}
	if r := l.be.deviceSynchronize(device); r.code != 0 {
		return l.fail(r, "cudaDeviceSynchronize() on device %d", device)
	}
	return nil
}

// kindFits reports whether dst and src sit on the sides kind names. A host Mem
// is a Go slice, which CUDA must never take for a device address; a device Mem
// may address managed or mapped host memory, which CUDA reaches either way,
// but the kind must still say device for it, as it does for the fake.
func kindFits(dst, src Mem, kind MemcpyKind) bool {
	switch kind {
	case HostToHost:
		return dst.isH && src.isH
	case HostToDevice:
		return !dst.isH && src.isH
	case DeviceToHost:
		return dst.isH && !src.isH
	case DeviceToDevice:
		return !dst.isH && !src.isH
	case Default:
		return true
	}
	return false
}

// checkCopy is the error of a copy that Memcpy or MemcpyAsync will not pass to
// CUDA: nil for one of zero bytes, which does nothing.
func checkCopy(fn string, device int, dst, src Mem, kind MemcpyKind) error {
	call := fmt.Sprintf("%s(%s, %s, %s) on device %d", fn, dst, src, kind, device)
	switch {
	case dst.n != src.n:
		return invalid(call, fmt.Sprintf("dst has %s (%d B) but src has %s (%d B)", humanize.Bytes(dst.n), dst.n, humanize.Bytes(src.n), src.n))
	case kind < HostToHost || kind > Default:
		return invalid(call, fmt.Sprintf("kind %d is not a cudaMemcpyKind", int(kind)))
	case !kindFits(dst, src, kind):
		return invalid(call, fmt.Sprintf("%s copies %s, not %s to %s", kind, kindSides[kind], side(src), side(dst)))
	}
	return nil
}

// kindSides says what each kind but Default copies.
var kindSides = map[MemcpyKind]string{
	HostToHost:     "host to host",
	HostToDevice:   "host to device",
	DeviceToHost:   "device to host",
	DeviceToDevice: "device to device",
}

func side(m Mem) string {
	if m.isH {
		return "host"
	}
	return "device"
}
