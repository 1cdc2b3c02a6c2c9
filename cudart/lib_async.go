package cudart

import "github.com/dustin/go-humanize"

// MallocAsync is cudaMallocAsync on device and stream s.
func (l *Lib) MallocAsync(device int, size uint64, s Stream) (DevicePtr, error) {
	if l.closed.Load() {
		return 0, closedError("cudaMallocAsync")
	}
	r := l.be.mallocAsync(device, size, s)
	if r.code != 0 {
		return 0, l.fail(r, "cudaMallocAsync(%s, stream 0x%x) on device %d", humanize.Bytes(size), uintptr(s), device)
	}
	return DevicePtr(r.a), nil
}

// FreeAsync is cudaFreeAsync on device and stream s.
func (l *Lib) FreeAsync(device int, p DevicePtr, s Stream) error {
	if l.closed.Load() {
		return closedError("cudaFreeAsync")
	}
	if r := l.be.freeAsync(device, p, s); r.code != 0 {
		return l.fail(r, "cudaFreeAsync(%s, stream 0x%x) on device %d", p, uintptr(s), device)
	}
	return nil
}

// MemPoolReleaseThreshold reads cudaMemPoolAttrReleaseThreshold of device's
// default memory pool.
func (l *Lib) MemPoolReleaseThreshold(device int) (uint64, error) {
	if l.closed.Load() {
		return 0, closedError("cudaMemPoolGetAttribute")
	}
	r := l.be.memPoolReleaseThreshold(device)
	if r.code != 0 {
		return 0, l.fail(r, "cudaMemPoolGetAttribute(default pool of device %d, cudaMemPoolAttrReleaseThreshold)", device)
	}
	return r.a, nil
}

// SetMemPoolReleaseThreshold sets cudaMemPoolAttrReleaseThreshold of device's
// default memory pool.
func (l *Lib) SetMemPoolReleaseThreshold(device int, bytes uint64) error {
	if l.closed.Load() {
		return closedError("cudaMemPoolSetAttribute")
	}
	if r := l.be.setMemPoolReleaseThreshold(device, bytes); r.code != 0 {
		return l.fail(r, "cudaMemPoolSetAttribute(default pool of device %d, cudaMemPoolAttrReleaseThreshold, %s)", device, humanize.Bytes(bytes))
	}
	return nil
}
