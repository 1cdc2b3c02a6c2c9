package cudart

import (
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// HostAlloc is cudaHostAlloc with device current: size bytes of pinned host
// memory, valid until FreeHost. Size 0 returns nil.
func (l *library) HostAlloc(device int, size uint64, flags HostAllocFlags) ([]byte, error) {
	r := l.call(calls.HostAlloc, device, uintptr(size), uintptr(flags))
	if r.code != 0 {
		return nil, l.fail(calls.HostAlloc, r, "(%s, %s) on device %d", bytesize.Format(size), flags, device)
	}
	return cmem(r.a, size), nil
}

// HostGetDevicePointer is cudaHostGetDevicePointer on device: the device
// address of b[0], in mapped host memory.
func (l *library) HostGetDevicePointer(device int, b []byte) (DevicePtr, error) {
	if l.unusable() {
		return 0, closedError(calls.HostGetDevicePointer)
	}
	if len(b) == 0 {
		return 0, invalid(calls.HostGetDevicePointer, "no memory to map", "(%s) on device %d", HostMem(b), device)
	}
	r := l.callMem(calls.HostGetDevicePointer, device, [2]Mem{HostMem(b)}, 0)
	if r.code != 0 {
		return 0, l.fail(calls.HostGetDevicePointer, r, "(%s) on device %d", HostMem(b), device)
	}
	return DevicePtr(r.a), nil
}

// GetDeviceFlags is cudaGetDeviceFlags on device.
func (l *library) GetDeviceFlags(device int) (DeviceFlags, error) {
	r := l.call(calls.GetDeviceFlags, device)
	if r.code != 0 {
		return 0, l.fail(calls.GetDeviceFlags, r, "() on device %d", device)
	}
	return DeviceFlags(r.a), nil
}

// SetDeviceFlags is cudaSetDeviceFlags on device.
func (l *library) SetDeviceFlags(device int, flags DeviceFlags) error {
	if r := l.call(calls.SetDeviceFlags, device, uintptr(flags)); r.code != 0 {
		return l.fail(calls.SetDeviceFlags, r, "(0x%x) on device %d", uint32(flags), device)
	}
	return nil
}

// HostRegister is cudaHostRegister of all of b with device current. CUDA keeps
// using b after the call: b must stay alive until HostUnregister, so register
// memory Go does not manage (an mmap) or keep the slice reachable.
func (l *library) HostRegister(device int, b []byte, flags HostRegisterFlags) error {
	if l.unusable() {
		return closedError(calls.HostRegister)
	}
	if len(b) == 0 {
		return invalid(calls.HostRegister, "no memory to register", "(%s) on device %d", HostMem(b), device)
	}
	if r := l.callMem(calls.HostRegister, device, [2]Mem{HostMem(b)}, uintptr(len(b)), uintptr(flags)); r.code != 0 {
		return l.fail(calls.HostRegister, r, "(%s, %s, %s) on device %d", HostMem(b), bytesize.Format(uint64(len(b))), flags, device)
	}
	return nil
}

// HostUnregister is cudaHostUnregister of the range that starts at b[0].
func (l *library) HostUnregister(device int, b []byte) error {
	if l.unusable() {
		return closedError(calls.HostUnregister)
	}
	if len(b) == 0 {
		return invalid(calls.HostUnregister, "no memory to unregister", "(%s) on device %d", HostMem(b), device)
	}
	if r := l.callMem(calls.HostUnregister, device, [2]Mem{HostMem(b)}); r.code != 0 {
		return l.fail(calls.HostUnregister, r, "(%s) on device %d", HostMem(b), device)
	}
	return nil
}
