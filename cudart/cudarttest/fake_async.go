package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
)

// MallocAsync is cudaMallocAsync: memory from the device's default pool,
// counted against the device. It is ready when the call returns. Size 0
// returns a zero pointer and no error.
func (f *Fake) MallocAsync(device int, size uint64, s cudart.Stream) (cudart.DevicePtr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, x := f.mallocAsync(device, size, s)
	if x != nil {
		return 0, x.err("cudaMallocAsync(%s, stream 0x%x)", human(size), uintptr(s))
	}
	return p, nil
}

func (f *Fake) mallocAsync(device int, size uint64, s cudart.Stream) (cudart.DevicePtr, *failure) {
	if x := f.streamCall(callMallocAsync, device, s); x != nil {
		return 0, x
	}
	if size == 0 {
		return 0, nil
	}
	return f.newRegion(callMallocAsync, kindAsync, device, size)
}

// FreeAsync is cudaFreeAsync of memory from MallocAsync; a zero pointer is
// a no-op. The memory returns to the device at once: the fake's pool keeps
// nothing, whatever the release threshold.
func (f *Fake) FreeAsync(device int, p cudart.DevicePtr, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.streamCall(callFreeAsync, device, s)
	if x == nil && p != 0 {
		x = f.free(p, kindAsync)
	}
	if x != nil {
		return x.err("cudaFreeAsync(%s, stream 0x%x)", p, uintptr(s))
	}
	return nil
}

// MemPoolReleaseThreshold reads the default pool's release threshold
// (cudaMemPoolAttrReleaseThreshold), 0 until set.
func (f *Fake) MemPoolReleaseThreshold(device int) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(callMemPoolGetAttribute, device); x != nil {
		return 0, x.err("cudaMemPoolGetAttribute(device %d, cudaMemPoolAttrReleaseThreshold)", device)
	}
	return f.devs[device].threshold, nil
}

// SetMemPoolReleaseThreshold sets the default pool's release threshold.
func (f *Fake) SetMemPoolReleaseThreshold(device int, bytes uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(callMemPoolSetAttribute, device); x != nil {
		return x.err("cudaMemPoolSetAttribute(device %d, cudaMemPoolAttrReleaseThreshold, %s)", device, human(bytes))
	}
	f.devs[device].threshold = bytes
	return nil
}
