package cudart

import (
	"encoding/binary"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// MallocAsync is cudaMallocAsync on device and stream s.
func (l *library) MallocAsync(device int, size uint64, s Stream) (DevicePtr, error) {
	r := l.call(calls.MallocAsync, device, uintptr(size), uintptr(s))
	if r.code != 0 {
		return 0, l.fail(calls.MallocAsync, r, "(%s, stream 0x%x) on device %d", bytesize.Format(size), uintptr(s), device)
	}
	return DevicePtr(r.a), nil
}

// FreeAsync is cudaFreeAsync on device and stream s.
func (l *library) FreeAsync(device int, p DevicePtr, s Stream) error {
	if r := l.call(calls.FreeAsync, device, uintptr(p), uintptr(s)); r.code != 0 {
		return l.fail(calls.FreeAsync, r, "(%s, stream 0x%x) on device %d", p, uintptr(s), device)
	}
	return nil
}

// MemPoolReleaseThreshold reads cudaMemPoolAttrReleaseThreshold of device's
// default memory pool (cudaDeviceGetDefaultMemPool, cudaMemPoolGetAttribute).
func (l *library) MemPoolReleaseThreshold(device int) (uint64, error) {
	if l.unusable() {
		return 0, closedError(calls.MemPoolGetAttribute)
	}
	pool, err := l.defaultMemPool(device)
	if err != nil {
		return 0, err
	}
	r := l.call(calls.MemPoolGetAttribute, device, pool, poolReleaseThreshold)
	if r.code != 0 {
		return 0, l.fail(calls.MemPoolGetAttribute, r, "(default pool of device %d, cudaMemPoolAttrReleaseThreshold)", device)
	}
	return r.a, nil
}

// SetMemPoolReleaseThreshold sets cudaMemPoolAttrReleaseThreshold of device's
// default memory pool (cudaDeviceGetDefaultMemPool, cudaMemPoolSetAttribute).
func (l *library) SetMemPoolReleaseThreshold(device int, bytes uint64) error {
	if l.unusable() {
		return closedError(calls.MemPoolSetAttribute)
	}
	pool, err := l.defaultMemPool(device)
	if err != nil {
		return err
	}
	// The attribute's value is a cuuint64_t passed by address.
	v := binary.NativeEndian.AppendUint64(nil, bytes)
	if r := l.callMem(calls.MemPoolSetAttribute, device, [2]Mem{HostMem(v)}, pool, poolReleaseThreshold); r.code != 0 {
		return l.fail(calls.MemPoolSetAttribute, r, "(default pool of device %d, cudaMemPoolAttrReleaseThreshold, %s)", device, bytesize.Format(bytes))
	}
	return nil
}

// defaultMemPool is cudaDeviceGetDefaultMemPool: device's default pool.
func (l *library) defaultMemPool(device int) (uintptr, error) {
	r := l.call(calls.DeviceGetDefaultMemPool, device, cint(device))
	if r.code != 0 {
		return 0, l.fail(calls.DeviceGetDefaultMemPool, r, "(device %d)", device)
	}
	return uintptr(r.a), nil
}
