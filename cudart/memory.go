package cudart

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// DeviceCount is cudaGetDeviceCount.
func (l *library) DeviceCount() (int, error) {
	r := l.call(calls.GetDeviceCount, -1)
	if r.code != 0 {
		return 0, l.fail(calls.GetDeviceCount, r, "()")
	}
	return int(int32(r.a)), nil
}

// MemGetInfo is cudaMemGetInfo on device.
func (l *library) MemGetInfo(device int) (free, total uint64, err error) {
	r := l.call(calls.MemGetInfo, device)
	if r.code != 0 {
		return 0, 0, l.fail(calls.MemGetInfo, r, "() on device %d", device)
	}
	return r.a, r.b, nil
}

// Malloc is cudaMalloc on device.
func (l *library) Malloc(device int, size uint64) (DevicePtr, error) {
	r := l.call(calls.Malloc, device, uintptr(size))
	if r.code != 0 {
		return 0, l.fail(calls.Malloc, r, "(%s) on device %d", bytesize.Format(size), device)
	}
	return DevicePtr(r.a), nil
}

// Free is cudaFree on device.
func (l *library) Free(device int, p DevicePtr) error {
	if r := l.call(calls.Free, device, uintptr(p)); r.code != 0 {
		return l.fail(calls.Free, r, "(%s) on device %d", p, device)
	}
	return nil
}

// MallocHost is cudaMallocHost with device current: size bytes of pinned host
// memory, valid until FreeHost. Size 0 returns nil.
func (l *library) MallocHost(device int, size uint64) ([]byte, error) {
	r := l.call(calls.MallocHost, device, uintptr(size))
	if r.code != 0 {
		return nil, l.fail(calls.MallocHost, r, "(%s) on device %d", bytesize.Format(size), device)
	}
	return cmem(r.a, size), nil
}

// FreeHost is cudaFreeHost of memory from MallocHost or HostAlloc, named by
// its first byte; an empty b frees nothing, as cudaFreeHost(NULL) does.
func (l *library) FreeHost(b []byte) error {
	if l.unusable() {
		return closedError(calls.FreeHost)
	}
	if len(b) == 0 {
		return nil
	}
	if r := l.callMem(calls.FreeHost, -1, [2]Mem{HostMem(b)}); r.code != 0 {
		return l.fail(calls.FreeHost, r, "(%s)", HostMem(b))
	}
	return nil
}

// Memcpy is cudaMemcpy on device. dst and src must have the same length and
// sit on the sides kind names (Default accepts either); a copy of zero bytes
// does nothing.
func (l *library) Memcpy(device int, dst, src Mem, kind MemcpyKind) error {
	if l.unusable() {
		return closedError(calls.Memcpy)
	}
	if dst.n != src.n || dst.n == 0 || !kindFits(dst, src, kind) {
		return checkCopy(calls.Memcpy, device, dst, src, kind)
	}
	if r := l.callMem(calls.Memcpy, device, [2]Mem{dst, src}, uintptr(dst.n), cint(kind)); r.code != 0 {
		return l.fail(calls.Memcpy, r, "(%s, %s, %s, %s) on device %d", dst, src, bytesize.Exact(dst.n), kind, device)
	}
	return nil
}

// Memset is cudaMemset on device: n bytes at p set to value.
func (l *library) Memset(device int, p DevicePtr, value byte, n uint64) error {
	if r := l.call(calls.Memset, device, uintptr(p), uintptr(value), uintptr(n)); r.code != 0 {
		return l.fail(calls.Memset, r, "(%s, %d, %s) on device %d", p, value, bytesize.Exact(n), device)
	}
	return nil
}

// DeviceSynchronize is cudaDeviceSynchronize on device.
func (l *library) DeviceSynchronize(device int) error {
	if r := l.call(calls.DeviceSynchronize, device); r.code != 0 {
		return l.fail(calls.DeviceSynchronize, r, "() on device %d", device)
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

// checkCopy is the error of a copy (call c) that Memcpy or MemcpyAsync will
// not pass to CUDA: nil for one of zero bytes, which does nothing.
func checkCopy(c calls.Call, device int, dst, src Mem, kind MemcpyKind) error {
	const args = "(%s, %s, %s) on device %d"
	switch {
	case dst.n != src.n:
		return invalid(c, fmt.Sprintf("dst has %s (%d B) but src has %s (%d B)", bytesize.Format(dst.n), dst.n, bytesize.Format(src.n), src.n), args, dst, src, kind, device)
	case kind < HostToHost || kind > Default:
		return invalid(c, fmt.Sprintf("kind %d is not a cudaMemcpyKind", int(kind)), args, dst, src, kind, device)
	case !kindFits(dst, src, kind):
		return invalid(c, fmt.Sprintf("%s copies %s, not %s to %s", kind, kindSides[kind], side(src), side(dst)), args, dst, src, kind, device)
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
