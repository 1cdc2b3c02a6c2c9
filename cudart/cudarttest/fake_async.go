package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// MallocAsync is cudaMallocAsync: memory from the device's default pool,
// counted against the device. It is ready when the call returns. Size 0
// returns a zero pointer and no error.
func (f *Fake) MallocAsync(device int, size uint64, s cudart.Stream) (cudart.DevicePtr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, x := f.mallocAsync(device, size, s)
	if x != nil {
		return 0, x.err(cudart.CallMallocAsync, "(%s, stream 0x%x)", bytesize.Format(size), uintptr(s))
	}
	return p, nil
}

func (f *Fake) mallocAsync(device int, size uint64, s cudart.Stream) (cudart.DevicePtr, *failure) {
	if _, x := f.streamCall(cudart.CallMallocAsync, device, s); x != nil {
		return 0, x
	}
	if size == 0 {
		return 0, nil
	}
	return f.newRegion(cudart.CallMallocAsync, kindAsync, device, size)
}

// FreeAsync is cudaFreeAsync of memory from MallocAsync; a zero pointer is
// a no-op. The free is queued on s; when it runs, the memory returns to the
// device: the fake's pool keeps nothing, whatever the release threshold. A
// second free before then is refused.
func (f *Fake) FreeAsync(device int, p cudart.DevicePtr, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	qdev, x := f.streamCall(cudart.CallFreeAsync, device, s)
	if x == nil && p != 0 {
		x = f.freeAsync(qdev, p, s)
	}
	if x != nil {
		return x.err(cudart.CallFreeAsync, "(%s, stream 0x%x)", p, uintptr(s))
	}
	return nil
}

// MemPoolReleaseThreshold reads the default pool's release threshold
// (cudaMemPoolAttrReleaseThreshold), 0 until set, through the calls the
// binding makes: cudaDeviceGetDefaultMemPool, cudaMemPoolGetAttribute.
func (f *Fake) MemPoolReleaseThreshold(device int) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(cudart.CallDeviceGetDefaultMemPool, device); x != nil {
		return 0, x.err(cudart.CallDeviceGetDefaultMemPool, "(device %d)", device)
	}
	if x := f.enter(cudart.CallMemPoolGetAttribute); x != nil {
		return 0, x.err(cudart.CallMemPoolGetAttribute, "(default pool of device %d, cudaMemPoolAttrReleaseThreshold)", device)
	}
	return f.devs[device].threshold, nil
}

// SetMemPoolReleaseThreshold sets the default pool's release threshold,
// through cudaDeviceGetDefaultMemPool and cudaMemPoolSetAttribute.
func (f *Fake) SetMemPoolReleaseThreshold(device int, bytes uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(cudart.CallDeviceGetDefaultMemPool, device); x != nil {
		return x.err(cudart.CallDeviceGetDefaultMemPool, "(device %d)", device)
	}
	if x := f.enter(cudart.CallMemPoolSetAttribute); x != nil {
		return x.err(cudart.CallMemPoolSetAttribute, "(default pool of device %d, cudaMemPoolAttrReleaseThreshold, %s)", device, bytesize.Format(bytes))
	}
	f.devs[device].threshold = bytes
	return nil
}

// freeAsync checks that p is stream-ordered memory to free and queues the
// free on s.
func (f *Fake) freeAsync(qdev int, p cudart.DevicePtr, s cudart.Stream) *failure {
	i, ok := f.index(uint64(p))
	if !ok || f.regions[i].kind != kindAsync || f.regions[i].freeQueued {
		return f.free(p, kindAsync)
	}
	r := f.regions[i]
	if x := f.enqueue(qdev, s, cudart.CallFreeAsync, func() *failure {
		r.freeQueued = false
		return f.free(p, kindAsync)
	}); x != nil {
		return x
	}
	r.freeQueued = true
	return nil
}
