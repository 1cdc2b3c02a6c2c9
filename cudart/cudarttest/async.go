package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// MallocAsync is cudaMallocAsync: memory from the device's default pool,
// counted against the device. It is ready when the call returns. Size 0
// returns a zero pointer and no error. On a capturing stream it is also a
// memory allocation node of the capture's graph, and the graph's memory
// (see graphMem).
func (f *Fake) MallocAsync(device int, size uint64, s cudart.Stream) (cudart.DevicePtr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, x := f.mallocAsync(device, size, s)
	if x != nil {
		return 0, x.err(calls.MallocAsync, "(%s, stream 0x%x)", bytesize.Format(size), uintptr(s))
	}
	return p, nil
}

func (f *Fake) mallocAsync(device int, size uint64, s cudart.Stream) (cudart.DevicePtr, *failure) {
	if _, x := f.streamCall(calls.MallocAsync, device, s); x != nil {
		return 0, x
	}
	if size == 0 {
		return 0, nil
	}
	p, x := f.newRegion(calls.MallocAsync, kindAsync, device, size)
	if x == nil {
		f.captureAlloc(s, p)
	}
	return p, x
}

// FreeAsync is cudaFreeAsync of memory from MallocAsync; a zero pointer is
// a no-op. The free is queued on s; when it runs, the memory returns to the
// device: the fake's pool keeps nothing, whatever the release threshold. A
// second free before then is refused. On a capturing stream it is a memory
// free node of the capture's graph, which frees memory the capture
// allocated when the graph and its instantiations are gone, and other
// memory when the graph runs.
func (f *Fake) FreeAsync(device int, p cudart.DevicePtr, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	qdev, x := f.streamCall(calls.FreeAsync, device, s)
	if x == nil && p != 0 {
		x = f.freeAsync(qdev, p, s)
	}
	if x != nil {
		return x.err(calls.FreeAsync, "(%s, stream 0x%x)", p, uintptr(s))
	}
	return nil
}

// MemPoolReleaseThreshold reads the default pool's release threshold
// (cudaMemPoolAttrReleaseThreshold), 0 until set, through the calls the
// binding makes: cudaDeviceGetDefaultMemPool, cudaMemPoolGetAttribute.
func (f *Fake) MemPoolReleaseThreshold(device int) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(calls.DeviceGetDefaultMemPool, device); x != nil {
		return 0, x.err(calls.DeviceGetDefaultMemPool, "(device %d)", device)
	}
	if x := f.enter(calls.MemPoolGetAttribute); x != nil {
		return 0, x.err(calls.MemPoolGetAttribute, "(default pool of device %d, cudaMemPoolAttrReleaseThreshold)", device)
	}
	return f.devs[device].threshold, nil
}

// SetMemPoolReleaseThreshold sets the default pool's release threshold,
// through cudaDeviceGetDefaultMemPool and cudaMemPoolSetAttribute.
func (f *Fake) SetMemPoolReleaseThreshold(device int, bytes uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(calls.DeviceGetDefaultMemPool, device); x != nil {
		return x.err(calls.DeviceGetDefaultMemPool, "(device %d)", device)
	}
	if x := f.enter(calls.MemPoolSetAttribute); x != nil {
		return x.err(calls.MemPoolSetAttribute, "(default pool of device %d, cudaMemPoolAttrReleaseThreshold, %s)", device, bytesize.Format(bytes))
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
	if r.graph != nil {
		return f.captureFree(s, r)
	}
	if x := f.enqueue(qdev, s, calls.FreeAsync, func() *failure {
		r.freeQueued = false
		return f.free(p, kindAsync)
	}); x != nil {
		return x
	}
	r.freeQueued = true
	return nil
}
