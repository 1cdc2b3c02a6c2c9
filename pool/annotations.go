package pool

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cudapool/cudapool/cudart"
)

// The pool describes its arenas to memory tools when the runtime has a
// listener (cudart.Annotations): each arena a heap from New to Close, each
// buffer a region from the Satisfy that places it, every region dropped at
// ReleaseAll. Inside a heap a tool treats bytes no region covers as
// unallocated, so compute-sanitizer reports an access past a buffer's end as
// it would past a cudaMalloc'd one, and the fake does WithMemcheck. With no
// listener the pool makes none of these calls.

// annotationsOf is rt's annotations when something listens, else nil.
func annotationsOf(rt cudart.Runtime, device int) cudart.Annotations {
	if a, ok := rt.(cudart.Annotations); ok && a.AnnotationsEnabled(device) {
		return a
	}
	return nil
}

// annotBase is the address the arena is registered at: a host arena by its
// host address, which is also its device address under unified addressing.
func (l *ledger) annotBase() cudart.DevicePtr {
	if h := l.mem.host(); h != nil {
		return cudart.HostPtr(h)
	}
	return l.mem.device()
}

// registerHeaps registers every arena as a heap, pushing onto undo what
// unregisters it.
func (p *Pool) registerHeaps(undo *undoList) error {
	if p.annot == nil {
		return nil
	}
	for _, l := range p.arenas {
		if l == nil {
			continue
		}
		if err := p.heapFor(l); err != nil {
			return err
		}
		undo.push(func() error {
			if l.heap == 0 {
				return nil
			}
			return p.annot.MemHeapUnregister(l.heap)
		})
	}
	return nil
}

// heapFor keeps l's heap over the bytes the arena has: all of a fixed
// arena, and the mapped part of a growable one, which tools refuse to take
// as a heap while unmapped. When that changes, the heap is registered again
// and its regions with it, by annotate.
func (p *Pool) heapFor(l *ledger) error {
	if !l.mem.annotatable() {
		return nil
	}
	size := l.mem.stats(ArenaStats{Mapped: l.capacity}).Mapped
	if size == l.heapSize && (l.heap != 0 || size == 0) {
		return nil
	}
	if l.heap != 0 {
		if err := p.annot.MemHeapUnregister(l.heap); err != nil {
			return fmt.Errorf("pool: unannotate the %s arena to resize it: %w", l.kind, err)
		}
		l.heap, l.heapSize, l.regions = 0, 0, nil
	}
	if size == 0 {
		return nil
	}
	name := fmt.Sprintf("cudapool %s arena (device %d)", l.kind, p.dev)
	h, err := p.annot.MemHeapRegister(p.dev, l.annotBase(), size, name)
	if err != nil {
		return fmt.Errorf("pool: annotate the %s arena: %w", l.kind, err)
	}
	l.heap, l.heapSize = h, size
	return nil
}

// unregisterHeaps is Close's part: every heap and its regions are forgotten.
func (p *Pool) unregisterHeaps() error {
	if p.annot == nil {
		return nil
	}
	var errs []error
	for _, l := range p.arenas {
		if l != nil && l.heap != 0 {
			if err := p.annot.MemHeapUnregister(l.heap); err != nil {
				errs = append(errs, fmt.Errorf("pool: unannotate the %s arena: %w", l.kind, err))
				continue
			}
			l.heap, l.heapSize, l.regions = 0, 0, nil
		}
	}
	return errors.Join(errs...)
}

// resetHeaps is ReleaseAll's part: no buffer is allocated any more.
func (p *Pool) resetHeaps() error {
	if p.annot == nil {
		return nil
	}
	var errs []error
	for _, l := range p.arenas {
		if l != nil && l.heap != 0 && len(l.regions) > 0 {
			if err := p.annot.MemHeapReset(l.heap); err != nil {
				errs = append(errs, fmt.Errorf("pool: unannotate the %s arena's buffers: %w", l.kind, err))
				continue
			}
			l.regions = nil
		}
	}
	return errors.Join(errs...)
}

// annotate brings the regions registered in l's heap in line with its
// buffers: those alive at the pool's step, or every placed buffer before
// Step is called. Buffers that start at the same offset (never alive
// together) are one region then, as large as the largest, named after them
// all: without a step the pool cannot tell which is in use.
func (p *Pool) annotate(l *ledger) error {
	if p.annot == nil {
		return nil
	}
	if err := p.heapFor(l); err != nil || l.heap == 0 {
		return err
	}
	base := l.annotBase()
	want := make(map[uint64]cudart.MemRegion)
	for _, b := range l.placed {
		if !p.aliveNow(b) {
			continue
		}
		if b.sub {
			for _, r := range l.owned[b] {
				off := uint64(r.Addr - base)
				if w, ok := want[off]; ok {
					r.Name, r.Size = w.Name+" | "+r.Name, max(r.Size, w.Size)
				}
				want[off] = r
			}
			continue
		}
		name := requestName(b.name, b.size)
		r, ok := want[b.offset]
		if ok {
			name = r.Name + " | " + name
		}
		want[b.offset] = cudart.MemRegion{Addr: base.Add(b.offset), Size: max(r.Size, b.size), Name: name}
	}
	var drop []cudart.DevicePtr
	var dropOffs []uint64
	for off, r := range l.regions {
		if w, ok := want[off]; !ok || w != r {
			drop = append(drop, r.Addr)
			dropOffs = append(dropOffs, off)
		}
	}
	var add []cudart.MemRegion
	for off, w := range want {
		if r, ok := l.regions[off]; !ok || r != w {
			add = append(add, w)
		}
	}
	if len(drop) > 0 {
		slices.Sort(drop)
		if err := p.annot.MemRegionsUnregister(l.heap, drop); err != nil {
			return fmt.Errorf("pool: unannotate %d buffer(s) of the %s arena: %w", len(drop), l.kind, err)
		}
		for _, off := range dropOffs {
			delete(l.regions, off)
		}
	}
	if len(add) > 0 {
		slices.SortFunc(add, func(a, b cudart.MemRegion) int { return cmp.Compare(a.Addr, b.Addr) })
		if err := p.annot.MemRegionsRegister(l.heap, add); err != nil {
			return fmt.Errorf("pool: annotate %d buffer(s) of the %s arena (%s): %w", len(add), l.kind, names(add), err)
		}
		if l.regions == nil {
			l.regions = make(map[uint64]cudart.MemRegion, len(add))
		}
		for _, r := range add {
			l.regions[uint64(r.Addr-base)] = r
		}
	}
	return nil
}

// names lists the first few regions' names for an error message.
func names(rs []cudart.MemRegion) string {
	const most = 3
	var out []string
	for i, r := range rs {
		if i == most {
			out = append(out, fmt.Sprintf("and %d more", len(rs)-most))
			break
		}
		out = append(out, fmt.Sprintf("%q", r.Name))
	}
	return strings.Join(out, ", ")
}

// maintain runs fn, which writes or reads bytes of l that are no buffer's
// (guards, poison), with all of l annotated as one region, so that the
// pool's own upkeep is not reported as the program's bug; the buffers'
// regions are registered again after. Device work fn queued is waited for
// first, as a tool may judge it by the annotations when it runs.
func (p *Pool) maintain(l *ledger, fn func() error) error {
	if p.annot == nil || l.mem.host() != nil {
		// Host arenas are kept by Go code, which no tool watches, but
		// their buffers are annotated all the same, for the copies.
		return errors.Join(fn(), p.annotate(l))
	}
	if err := p.heapFor(l); err != nil || l.heap == 0 {
		return errors.Join(err, fn())
	}
	if err := p.annot.MemHeapReset(l.heap); err != nil {
		return fmt.Errorf("pool: unannotate the %s arena's buffers: %w", l.kind, err)
	}
	l.regions = nil
	whole := cudart.MemRegion{Addr: l.annotBase(), Size: l.heapSize, Name: "cudapool upkeep"}
	if err := p.annot.MemRegionsRegister(l.heap, []cudart.MemRegion{whole}); err != nil {
		return fmt.Errorf("pool: annotate the %s arena for upkeep: %w", l.kind, err)
	}
	err := errors.Join(fn(), p.settle())
	if uerr := p.annot.MemRegionsUnregister(l.heap, []cudart.DevicePtr{whole.Addr}); uerr != nil {
		return errors.Join(err, fmt.Errorf("pool: unannotate the %s arena after upkeep: %w", l.kind, uerr))
	}
	return errors.Join(err, p.annotate(l))
}
