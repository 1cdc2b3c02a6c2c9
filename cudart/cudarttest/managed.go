package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// MallocManaged is cudaMallocManaged: device-addressable memory counted
// against device. Size 0 fails with cudaErrorInvalidValue, as CUDA does.
func (f *Fake) MallocManaged(device int, size uint64, flags cudart.MemAttachFlags) (cudart.DevicePtr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, x := f.mallocManaged(device, size, flags)
	if x != nil {
		return 0, x.err(calls.MallocManaged, "(%s, 0x%x)", bytesize.Format(size), uint32(flags))
	}
	return p, nil
}

func (f *Fake) mallocManaged(device int, size uint64, flags cudart.MemAttachFlags) (cudart.DevicePtr, *failure) {
	if x := f.check(calls.MallocManaged, device); x != nil {
		return 0, x
	}
	if flags != cudart.MemAttachGlobal && flags != cudart.MemAttachHost {
		return 0, invalid("flags must be cudaMemAttachGlobal or cudaMemAttachHost")
	}
	if size == 0 {
		return 0, invalid("size 0")
	}
	return f.newRegion(calls.MallocManaged, kindManaged, device, size)
}

// MemPrefetchAsync is cudaMemPrefetchAsync: [p, p+n) must lie in one managed
// allocation, dstDevice must be a device or cudart.CPUDevice. The prefetch
// is queued on s; when it runs, the fake records the destination
// (PrefetchedTo).
func (f *Fake) MemPrefetchAsync(device int, p cudart.DevicePtr, n uint64, dstDevice int, s cudart.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.prefetch(device, p, n, dstDevice, s); x != nil {
		return x.err(calls.MemPrefetchAsync, "(%s, %s, to device %d, stream 0x%x)", p, bytesize.Format(n), dstDevice, uintptr(s))
	}
	return nil
}

func (f *Fake) prefetch(device int, p cudart.DevicePtr, n uint64, dstDevice int, s cudart.Stream) *failure {
	qdev, x := f.streamCall(calls.MemPrefetchAsync, device, s)
	if x != nil {
		return x
	}
	if dstDevice != cudart.CPUDevice {
		if x := f.device(dstDevice); x != nil {
			return x
		}
	}
	r := f.containing(uint64(p))
	if r == nil || r.kind != kindManaged {
		return invalid("%s is not managed memory", p)
	}
	if n > r.end()-uint64(p) {
		return invalid("range [%s, +%s) runs past the end of %s", p, bytesize.Format(n), r.describe())
	}
	return f.enqueue(qdev, s, calls.MemPrefetchAsync, func() *failure {
		if f.containing(uint64(p)) != r {
			return invalid("%s was freed before the prefetch ran", p)
		}
		r.prefetched, r.prefetchTo = true, dstDevice
		return nil
	})
}
