package cudart

import (
	"fmt"
	"unsafe"

	"github.com/dustin/go-humanize"
)

// HostAlloc is cudaHostAlloc with device current.
func (l *Lib) HostAlloc(device int, size uint64, flags HostAllocFlags) (unsafe.Pointer, error) {
	if l.closed.Load() {
		return nil, closedError("cudaHostAlloc")
	}
	r := l.be.hostAlloc(device, size, flags)
	if r.code != 0 {
		return nil, l.fail(r, "cudaHostAlloc(%s, %s) on device %d", humanize.Bytes(size), flags, device)
	}
	return r.p, nil
}

// HostGetDevicePointer is cudaHostGetDevicePointer on device.
func (l *Lib) HostGetDevicePointer(device int, p unsafe.Pointer) (DevicePtr, error) {
	if l.closed.Load() {
		return 0, closedError("cudaHostGetDevicePointer")
	}
	r := l.be.hostGetDevicePointer(device, p)
	if r.code != 0 {
		return 0, l.fail(r, "cudaHostGetDevicePointer(%p) on device %d", p, device)
	}
	return DevicePtr(r.a), nil
}

// GetDeviceFlags is cudaGetDeviceFlags on device.
func (l *Lib) GetDeviceFlags(device int) (DeviceFlags, error) {
	if l.closed.Load() {
		return 0, closedError("cudaGetDeviceFlags")
	}
	r := l.be.getDeviceFlags(device)
	if r.code != 0 {
		return 0, l.fail(r, "cudaGetDeviceFlags() on device %d", device)
	}
	return DeviceFlags(r.a), nil
}

// SetDeviceFlags is cudaSetDeviceFlags on device.
func (l *Lib) SetDeviceFlags(device int, flags DeviceFlags) error {
	if l.closed.Load() {
		return closedError("cudaSetDeviceFlags")
	}
	if r := l.be.setDeviceFlags(device, flags); r.code != 0 {
		return l.fail(r, "cudaSetDeviceFlags(0x%x) on device %d", uint32(flags), device)
	}
	return nil
}

// HostRegister is cudaHostRegister of all of b with device current. CUDA keeps
// using b after the call: b must stay alive until HostUnregister, so register
// memory Go does not manage (an mmap) or keep the slice reachable.
func (l *Lib) HostRegister(device int, b []byte, flags HostRegisterFlags) error {
	if l.closed.Load() {
		return closedError("cudaHostRegister")
	}
	if len(b) == 0 {
		return invalid(fmt.Sprintf("cudaHostRegister(%p, 0 B) on device %d", unsafe.SliceData(b), device), "no memory to register")
	}
	if r := l.be.hostRegister(device, b, flags); r.code != 0 {
		return l.fail(r, "cudaHostRegister(%p, %s, %s) on device %d", unsafe.SliceData(b), humanize.Bytes(uint64(len(b))), flags, device)
	}
	return nil
}

// HostUnregister is cudaHostUnregister of the range that starts at b[0].
func (l *Lib) HostUnregister(device int, b []byte) error {
	if l.closed.Load() {
		return closedError("cudaHostUnregister")
	}
	if len(b) == 0 {
		return invalid(fmt.Sprintf("cudaHostUnregister(%p) on device %d", unsafe.SliceData(b), device), "no memory to unregister")
	}
	if r := l.be.hostUnregister(device, b); r.code != 0 {
		return l.fail(r, "cudaHostUnregister(%p) on device %d", unsafe.SliceData(b), device)
	}
	return nil
}
