package cudart

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/cudart/internal/memregions"
)

var _ Annotations = (*library)(nil)

// processTool is the NVTX tool of the process, looked for on the first
// annotation of any Library: NVTX's C code too initialises its tool once, and
// every Library shares the tables that init handed out.
var processTool = sync.OnceValue(toolFromEnv)

// toolFromEnv attaches the tool the environment names, as NVTX does.
func toolFromEnv() *nvtxTool { return loadNVTX(os.Getenv(injectionEnv())) }

// annotations is a Library's side of Annotations.
type annotations struct {
	once sync.Once
	tool *nvtxTool // nil when no tool listens

	mu  sync.Mutex // guards what follows, and orders the tool's calls as reg's changes
	reg memregions.Registry
	// heaps is the tool's handle of each heap, by reg's id.
	heaps map[uint64]uintptr
	// devices is the device of each heap, by reg's id: the one whose
	// context is made current for the tool's calls about the heap.
	devices map[uint64]int
	// regions and addrs hold the arguments converted for reg, reused so
	// that with no tool a call allocates no more than reg does.
	regions []memregions.Region
	addrs   []uint64
}

// nvtx is the tool l's annotations go to, nil when none. The first call
// attaches it, so it is made, like every call to the tool, on a locked OS
// thread with a device selected (current).
func (l *library) nvtx() *nvtxTool {
	l.ann.once.Do(func() { l.ann.tool = processTool() })
	return l.ann.tool
}

// current makes device's context current on the calling OS thread, which
// the caller has locked (runtime.LockOSThread) until its call to the tool
// returns. A tool finds the context of the memory it is told of on the
// calling thread: compute-sanitizer refuses an annotation made on a thread
// where no context is current ("The object is not ready"), and a goroutine
// may run on such a thread whatever CUDA calls it made before.
func (l *library) current(fn string, device int) error {
	if r := l.call(calls.SetDevice, device, cint(device)); r.code != 0 {
		return l.fail(calls.SetDevice, r, "(%d) for %s", device, fn)
	}
	return nil
}

// heapCurrent is current for the device of heap h when a tool listens; it
// does nothing for a heap l does not know, which the registry refuses next.
func (l *library) heapCurrent(fn string, t *nvtxTool, h MemHeap) error {
	dev, ok := l.ann.devices[uint64(h)]
	if t == nil || !ok {
		return nil
	}
	return l.current(fn, dev)
}

// withRegions is do, reg's Add or Name, of regions in heap h, converted as
// reg takes them into a.regions, which is emptied after: reg has copied the
// names, which a must not keep reachable.
func (a *annotations) withRegions(h MemHeap, regions []MemRegion, do func(heap uint64, regions []memregions.Region) error) error {
	for _, r := range regions {
		a.regions = append(a.regions, memregions.Region{Addr: uint64(r.Addr), Size: r.Size, Name: r.Name})
	}
	err := do(uint64(h), a.regions)
	clear(a.regions)
	a.regions = a.regions[:0]
	return err
}

// annotationClosed is the error of annotation function fn on a nil or
// closed Library.
func annotationClosed(fn string) error { return fmt.Errorf("%w: %s", ErrClosed, fn) }

// misuse is the error of annotation function fn refused by the registry.
func misuse(fn string, err error) error {
	return fmt.Errorf("%w: %v", NewError(fn, ErrInvalidValue.Code), err)
}

// onHeap is annotation function fn about heap h: reg, the registry's part,
// then tell, the tool's, when a tool listens and the registry took the
// change; with the OS thread locked, the registry's lock held and, when a
// tool listens, h's device current. An error of reg is a misuse.
func (l *library) onHeap(fn string, h MemHeap, reg func(a *annotations) error, tell func(t *nvtxTool, a *annotations)) error {
	if l.unusable() {
		return annotationClosed(fn)
	}
	t, a := l.nvtx(), &l.ann
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := l.heapCurrent(fn, t, h); err != nil {
		return err
	}
	if err := reg(a); err != nil {
		return misuse(fn, err)
	}
	if t != nil {
		tell(t, a)
	}
	return nil
}

// AnnotationsEnabled reports whether an NVTX tool attached and took the
// memory extension (see the package documentation); false on a nil or
// closed Library, and for a device that cannot be selected. The first call
// attaches the tool with device's context current.
func (l *library) AnnotationsEnabled(device int) bool {
	if l.unusable() {
		return false
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return l.current("AnnotationsEnabled", device) == nil && l.nvtx() != nil
}

// MemHeapRegister is nvtxMemHeapRegister of a sub-allocator heap over
// [base, base+size) of device named name, in the "cudapool" domain where
// the tool creates domains. device is selected first, tool or not, so an
// ordinal CUDA refuses is refused here.
func (l *library) MemHeapRegister(device int, base DevicePtr, size uint64, name string) (MemHeap, error) {
	const fn = "nvtxMemHeapRegister"
	if l.unusable() {
		return 0, annotationClosed(fn)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := l.current(fn, device); err != nil {
		return 0, err
	}
	t, a := l.nvtx(), &l.ann
	a.mu.Lock()
	defer a.mu.Unlock()
	id, err := a.reg.AddHeap(uint64(base), size, name)
	if err != nil {
		return 0, misuse(fn, err)
	}
	if a.devices == nil {
		a.devices = make(map[uint64]int)
	}
	a.devices[id] = device
	if t != nil {
		if a.heaps == nil {
			a.heaps = make(map[uint64]uintptr)
		}
		a.heaps[id] = t.heapRegister(base, size, name)
	}
	return MemHeap(id), nil
}

// MemHeapUnregister is nvtxMemHeapUnregister.
func (l *library) MemHeapUnregister(h MemHeap) error {
	return l.onHeap("nvtxMemHeapUnregister", h, func(a *annotations) error {
		if err := a.reg.RemoveHeap(uint64(h)); err != nil {
			return err
		}
		delete(a.devices, uint64(h))
		return nil
	}, func(t *nvtxTool, a *annotations) {
		t.heapUnregister(a.heaps[uint64(h)])
		delete(a.heaps, uint64(h))
	})
}

// MemHeapReset is nvtxMemHeapReset. A tool without it is not told.
func (l *library) MemHeapReset(h MemHeap) error {
	return l.onHeap("nvtxMemHeapReset", h, func(a *annotations) error {
		return a.reg.ResetHeap(uint64(h))
	}, func(t *nvtxTool, a *annotations) {
		t.heapReset(a.heaps[uint64(h)])
	})
}

// MemRegionsRegister is nvtxMemRegionsRegister of regions in one batch,
// then nvtxMemRegionsName of the named ones in another.
func (l *library) MemRegionsRegister(h MemHeap, regions []MemRegion) error {
	return l.onHeap("nvtxMemRegionsRegister", h, func(a *annotations) error {
		return a.withRegions(h, regions, a.reg.Add)
	}, func(t *nvtxTool, a *annotations) {
		if len(regions) == 0 {
			return
		}
		t.regionsRegister(a.heaps[uint64(h)], regions)
		if named := slices.DeleteFunc(slices.Clone(regions), func(r MemRegion) bool { return r.Name == "" }); len(named) > 0 {
			t.regionsName(named)
		}
	})
}

// MemRegionsUnregister is nvtxMemRegionsUnregister of the regions that
// start at addrs, in one batch referring to them by address.
func (l *library) MemRegionsUnregister(h MemHeap, addrs []DevicePtr) error {
	return l.onHeap("nvtxMemRegionsUnregister", h, func(a *annotations) error {
		for _, p := range addrs {
			a.addrs = append(a.addrs, uint64(p))
		}
		err := a.reg.Remove(uint64(h), a.addrs)
		a.addrs = a.addrs[:0]
		return err
	}, func(t *nvtxTool, _ *annotations) {
		if len(addrs) > 0 {
			t.regionsUnregister(addrs)
		}
	})
}

// MemRegionsName is nvtxMemRegionsName of regions in one batch, each found
// by its address. A tool without it is not told.
func (l *library) MemRegionsName(h MemHeap, regions []MemRegion) error {
	return l.onHeap("nvtxMemRegionsName", h, func(a *annotations) error {
		return a.withRegions(h, regions, a.reg.Name)
	}, func(t *nvtxTool, _ *annotations) {
		if len(regions) > 0 {
			t.regionsName(regions)
		}
	})
}
