package cudart

import (
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/cudapool/cudapool/internal/memregions"
)

var _ Annotations = (*lib)(nil)

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
	// regions and addrs hold the arguments converted for reg, reused so
	// that with no tool a call allocates no more than reg does.
	regions []memregions.Region
	addrs   []uint64
}

// nvtx is the tool l's annotations go to, nil when none.
func (l *lib) nvtx() *nvtxTool {
	l.ann.once.Do(func() { l.ann.tool = processTool() })
	return l.ann.tool
}

// converted is regions as reg takes them, in a.regions until release.
func (a *annotations) converted(regions []MemRegion) []memregions.Region {
	for _, r := range regions {
		a.regions = append(a.regions, memregions.Region{Addr: uint64(r.Addr), Size: r.Size, Name: r.Name})
	}
	return a.regions
}

// release empties a.regions, whose names reg has copied and a must not
// keep reachable.
func (a *annotations) release() {
	clear(a.regions)
	a.regions = a.regions[:0]
}

// annotationClosed is the error of annotation function fn on a nil or
// closed Library.
func annotationClosed(fn string) error { return fmt.Errorf("%w: %s", ErrClosed, fn) }

// misuse is the error of annotation function fn refused by the registry.
func misuse(fn string, err error) error {
	return fmt.Errorf("cudart: %s: %w: %v", fn, ErrInvalidValue, err)
}

// AnnotationsEnabled reports whether an NVTX tool attached and took the
// memory extension (see the package documentation); false on a nil or
// closed Library.
func (l *lib) AnnotationsEnabled() bool {
	return !l.unusable() && l.nvtx() != nil
}

// MemHeapRegister is nvtxMemHeapRegister of a sub-allocator heap over
// [base, base+size) named name, in the "cudapool" domain where the tool
// creates domains.
func (l *lib) MemHeapRegister(base DevicePtr, size uint64, name string) (MemHeap, error) {
	const fn = "nvtxMemHeapRegister"
	if l.unusable() {
		return 0, annotationClosed(fn)
	}
	t, a := l.nvtx(), &l.ann
	a.mu.Lock()
	defer a.mu.Unlock()
	id, err := a.reg.AddHeap(uint64(base), size, name)
	if err != nil {
		return 0, misuse(fn, err)
	}
	if t != nil {
		if a.heaps == nil {
			a.heaps = make(map[uint64]uintptr)
		}
		a.heaps[id] = t.heapRegister(base, size, name)
	}
	return MemHeap(id), nil
}

// MemHeapUnregister is nvtxMemHeapUnregister.
func (l *lib) MemHeapUnregister(h MemHeap) error {
	const fn = "nvtxMemHeapUnregister"
	if l.unusable() {
		return annotationClosed(fn)
	}
	t, a := l.nvtx(), &l.ann
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.reg.RemoveHeap(uint64(h)); err != nil {
		return misuse(fn, err)
	}
	if t != nil {
		t.heapUnregister(a.heaps[uint64(h)])
		delete(a.heaps, uint64(h))
	}
	return nil
}

// MemHeapReset is nvtxMemHeapReset. A tool without it is not told.
func (l *lib) MemHeapReset(h MemHeap) error {
	const fn = "nvtxMemHeapReset"
	if l.unusable() {
		return annotationClosed(fn)
	}
	t, a := l.nvtx(), &l.ann
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.reg.ResetHeap(uint64(h)); err != nil {
		return misuse(fn, err)
	}
	if t != nil {
		t.heapReset(a.heaps[uint64(h)])
	}
	return nil
}

// MemRegionsRegister is nvtxMemRegionsRegister of regions in one batch,
// then nvtxMemRegionsName of the named ones in another.
func (l *lib) MemRegionsRegister(h MemHeap, regions []MemRegion) error {
	const fn = "nvtxMemRegionsRegister"
	if l.unusable() {
		return annotationClosed(fn)
	}
	t, a := l.nvtx(), &l.ann
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.reg.Add(uint64(h), a.converted(regions))
	a.release()
	if err != nil {
		return misuse(fn, err)
	}
	if t != nil && len(regions) > 0 {
		t.regionsRegister(a.heaps[uint64(h)], regions)
		if named := slices.DeleteFunc(slices.Clone(regions), func(r MemRegion) bool { return r.Name == "" }); len(named) > 0 {
			t.regionsName(named)
		}
	}
	return nil
}

// MemRegionsUnregister is nvtxMemRegionsUnregister of the regions that
// start at addrs, in one batch referring to them by address.
func (l *lib) MemRegionsUnregister(h MemHeap, addrs []DevicePtr) error {
	const fn = "nvtxMemRegionsUnregister"
	if l.unusable() {
		return annotationClosed(fn)
	}
	t, a := l.nvtx(), &l.ann
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range addrs {
		a.addrs = append(a.addrs, uint64(p))
	}
	err := a.reg.Remove(uint64(h), a.addrs)
	a.addrs = a.addrs[:0]
	if err != nil {
		return misuse(fn, err)
	}
	if t != nil && len(addrs) > 0 {
		t.regionsUnregister(addrs)
	}
	return nil
}

// MemRegionsName is nvtxMemRegionsName of regions in one batch, each found
// by its address. A tool without it is not told.
func (l *lib) MemRegionsName(h MemHeap, regions []MemRegion) error {
	const fn = "nvtxMemRegionsName"
	if l.unusable() {
		return annotationClosed(fn)
	}
	t, a := l.nvtx(), &l.ann
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.reg.Name(uint64(h), a.converted(regions))
	a.release()
	if err != nil {
		return misuse(fn, err)
	}
	if t != nil && len(regions) > 0 {
		t.regionsName(regions)
	}
	return nil
}
