package cudarttest

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/cudart/internal/memregions"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// annotState is what the fake keeps of the memory annotations: the heaps and
// their regions, checked by the rules the CUDA binding checks them by, and
// the call that registered each heap, for leak reports.
type annotState struct {
	reg   memregions.Registry
	heaps map[cudart.MemHeap]heapInfo
	// asOf, while queued work runs, is the registry as it was when the work
	// was queued: a program may annotate ahead of the device (Step while a
	// kernel is queued), and the tool judges a launch by the annotations it
	// was launched under.
	asOf *memregions.Registry
}

// checkedAsOf makes op check its accesses against the annotations as they
// are now.
func (a *annotState) checkedAsOf(op func() *failure) func() *failure {
	snap := a.reg.Snapshot()
	return func() *failure {
		prev := a.asOf
		a.asOf = snap
		defer func() { a.asOf = prev }()
		return op()
	}
}

type heapInfo struct {
	device int
	base   cudart.DevicePtr
	size   uint64
	name   string
	seq    int
	origin origin // on a fake that checks leaks
}

// AnnotationsEnabled reports whether the fake was made WithMemcheck: then it
// is the tool that listens, as compute-sanitizer is on a GPU. Without it the
// annotation calls still check their arguments, as CUDA's binding does with
// no tool attached. It is false for a device the fake does not have, which
// the binding cannot select.
func (f *Fake) AnnotationsEnabled(device int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opts.memcheck && f.device(device) == nil
}

// MemHeapRegister is nvtxMemHeapRegister. A heap left registered is reported
// by CheckLeaks. A device the fake does not have is refused as the binding's
// selection of it is, with cudaErrorInvalidDevice.
func (f *Fake) MemHeapRegister(device int, base cudart.DevicePtr, size uint64, name string) (cudart.MemHeap, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.device(device); x != nil {
		return 0, x.err(calls.SetDevice, "(%d) for nvtxMemHeapRegister", device)
	}
	id, err := f.annot.reg.AddHeap(uint64(base), size, name)
	if err != nil {
		return 0, annotErr("nvtxMemHeapRegister", err)
	}
	if f.annot.heaps == nil {
		f.annot.heaps = make(map[cudart.MemHeap]heapInfo)
	}
	h := cudart.MemHeap(id)
	info := heapInfo{device: device, base: base, size: size, name: name, seq: f.seq}
	if f.origins != nil {
		info.origin = callerOrigin()
	}
	f.annot.heaps[h] = info
	return h, nil
}

// MemHeapUnregister is nvtxMemHeapUnregister.
func (f *Fake) MemHeapUnregister(h cudart.MemHeap) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.annot.reg.RemoveHeap(uint64(h)); err != nil {
		return annotErr("nvtxMemHeapUnregister", err)
	}
	delete(f.annot.heaps, h)
	return nil
}

// MemHeapReset is nvtxMemHeapReset.
func (f *Fake) MemHeapReset(h cudart.MemHeap) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return annotErr("nvtxMemHeapReset", f.annot.reg.ResetHeap(uint64(h)))
}

// MemRegionsRegister is nvtxMemRegionsRegister and nvtxMemRegionsName.
func (f *Fake) MemRegionsRegister(h cudart.MemHeap, regions []cudart.MemRegion) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return annotErr("nvtxMemRegionsRegister", f.annot.reg.Add(uint64(h), toRegions(regions)))
}

// MemRegionsUnregister is nvtxMemRegionsUnregister.
func (f *Fake) MemRegionsUnregister(h cudart.MemHeap, addrs []cudart.DevicePtr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	as := make([]uint64, len(addrs))
	for i, a := range addrs {
		as[i] = uint64(a)
	}
	return annotErr("nvtxMemRegionsUnregister", f.annot.reg.Remove(uint64(h), as))
}

// MemRegionsName is nvtxMemRegionsName.
func (f *Fake) MemRegionsName(h cudart.MemHeap, regions []cudart.MemRegion) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return annotErr("nvtxMemRegionsName", f.annot.reg.Name(uint64(h), toRegions(regions)))
}

func toRegions(regions []cudart.MemRegion) []memregions.Region {
	out := make([]memregions.Region, len(regions))
	for i, r := range regions {
		out[i] = memregions.Region{Addr: uint64(r.Addr), Size: r.Size, Name: r.Name}
	}
	return out
}

// annotErr is the error of NVTX function fn refused by the registry: the
// same words as the CUDA binding's.
func annotErr(fn string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v", cudart.NewError(fn, cudart.ErrInvalidValue.Code), err)
}

// memcheck fails an access to [a, a+n) that lies in a registered heap but in
// none of its regions, when the fake was made WithMemcheck. A device address
// that maps host memory is checked as the host address it maps, which is how
// the host arena is registered.
func (f *Fake) memcheck(a, n uint64, verb string) *failure {
	if !f.opts.memcheck {
		return nil
	}
	if r := f.containing(a); r != nil && r.kind == kindHostAlias {
		a = uint64(r.host.start) + (a - r.base)
	}
	if m := f.annotations().Check(a, n); m != nil {
		return fail(700, "memcheck: %s of %s at %s: %v", verb, bytesize.Exact(n), cudart.DevicePtr(a), m)
	}
	return nil
}

// annotations is the registry accesses are checked against: as it was when
// the work running now was queued, or as it is.
func (f *Fake) annotations() *memregions.Registry {
	if f.annot.asOf != nil {
		return f.annot.asOf
	}
	return &f.annot.reg
}

// memcheckCopy is memcheck of both ends of a copy.
func (f *Fake) memcheckCopy(dst, src cudart.Mem) *failure {
	if x := f.memcheck(memAddr(dst), dst.Len(), "write"); x != nil {
		return x
	}
	return f.memcheck(memAddr(src), src.Len(), "read")
}

func memAddr(m cudart.Mem) uint64 {
	if m.IsHost() {
		return uint64(addrOf(m.Host()))
	}
	return uint64(m.Device())
}
