// Package memregions keeps the heaps and regions of memory annotations
// (cudart.Annotations): the one set of rules by which the CUDA binding and
// the fake check their arguments, and by which the fake's memcheck finds the
// buffer an access missed.
package memregions

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/internal/bytesize"
)

// Region is Size bytes from Addr, called Name.
type Region struct {
	Addr, Size uint64
	Name       string
}

// End is the address one past the region's last byte.
func (r Region) End() uint64 { return r.Addr + r.Size }

// Label names r in messages: its name and size, or its address and size.
func (r Region) Label() string {
	if r.Name != "" {
		return fmt.Sprintf("%q (%s)", r.Name, bytesize.Exact(r.Size))
	}
	return fmt.Sprintf("the unnamed buffer at 0x%x (%s)", r.Addr, bytesize.Exact(r.Size))
}

type heap struct {
	frozen     bool // shared with a snapshot: copy before changing
	id         uint64
	base, size uint64
	name       string
	regions    []Region // sorted by Addr, no two at one Addr
	// reach[i] is the furthest End of regions[:i+1]: it never falls, so
	// whether an address is covered is one binary search however the
	// regions overlap.
	reach []uint64
	// gone is the regions unregistered last, oldest first, at most
	// maxGone: what a miss names when its byte was in one, as a tool that
	// tracks frees names the buffer a use after free was in.
	gone []Region
}

// maxGone bounds a heap's memory of unregistered regions.
const maxGone = 256

// forget remembers regions as unregistered.
func (h *heap) forget(regions ...Region) {
	h.gone = append(h.gone, regions...)
	if k := len(h.gone) - maxGone; k > 0 {
		h.gone = slices.Delete(h.gone, 0, k)
	}
}

func (h *heap) end() uint64 { return h.base + h.size }

func (h *heap) index(addr uint64) (int, bool) {
	return slices.BinarySearchFunc(h.regions, addr, func(r Region, a uint64) int { return cmp.Compare(r.Addr, a) })
}

// rebuild recomputes reach after regions changed.
func (h *heap) rebuild() {
	h.reach = h.reach[:0]
	for i, r := range h.regions {
		e := r.End()
		if i > 0 {
			e = max(e, h.reach[i-1])
		}
		h.reach = append(h.reach, e)
	}
}

// Registry is the live heaps and their regions. It is not safe for
// concurrent use. A change modifies the registry in place, except what a
// Snapshot shares, which it copies first.
type Registry struct {
	heaps []*heap // sorted by base; heaps never overlap
	next  uint64
	// frozen: heaps is shared with a snapshot. A heap shared with one is
	// marked frozen itself.
	frozen bool
}

// Snapshot is the registry as it is now, unaffected by later changes: what
// work queued now is checked against when it runs later.
func (r *Registry) Snapshot() *Registry {
	for _, h := range r.heaps {
		h.frozen = true
	}
	r.frozen = true
	return &Registry{heaps: r.heaps, next: r.next, frozen: true}
}

// thaw makes heaps r's own to change.
func (r *Registry) thaw() {
	if r.frozen {
		r.heaps = slices.Clone(r.heaps)
		r.frozen = false
	}
}

// own returns the heap at i, copied first if a snapshot shares it.
func (r *Registry) own(i int) *heap {
	r.thaw()
	if h := r.heaps[i]; h.frozen {
		c := *h
		c.regions, c.reach, c.gone, c.frozen = slices.Clone(h.regions), slices.Clone(h.reach), slices.Clone(h.gone), false
		r.heaps[i] = &c
	}
	return r.heaps[i]
}

// AddHeap registers [base, base+size) as a heap and returns its id, never 0.
func (r *Registry) AddHeap(base, size uint64, name string) (uint64, error) {
	switch {
	case size == 0:
		return 0, fmt.Errorf("heap %q at 0x%x is empty", name, base)
	case base == 0:
		return 0, fmt.Errorf("heap %q (%s) is at address 0", name, bytesize.Format(size))
	case base+size < base:
		return 0, fmt.Errorf("heap %q at 0x%x (%s) runs past the end of the address space", name, base, bytesize.Format(size))
	}
	i, _ := slices.BinarySearchFunc(r.heaps, base, func(h *heap, b uint64) int { return cmp.Compare(h.base, b) })
	for _, j := range []int{i - 1, i} {
		if j >= 0 && j < len(r.heaps) && r.heaps[j].base < base+size && base < r.heaps[j].end() {
			o := r.heaps[j]
			return 0, fmt.Errorf("heap %q [0x%x, +%s) overlaps heap %q [0x%x, +%s)", name, base, bytesize.Format(size), o.name, o.base, bytesize.Format(o.size))
		}
	}
	r.next++
	r.thaw()
	r.heaps = slices.Insert(r.heaps, i, &heap{id: r.next, base: base, size: size, name: name})
	return r.next, nil
}

func (r *Registry) heap(id uint64) (int, *heap, error) {
	for i, h := range r.heaps {
		if h.id == id {
			return i, h, nil
		}
	}
	return 0, nil, fmt.Errorf("heap %d is not registered", id)
}

// RemoveHeap forgets heap id and its regions.
func (r *Registry) RemoveHeap(id uint64) error {
	i, _, err := r.heap(id)
	if err != nil {
		return err
	}
	r.thaw()
	r.heaps = slices.Delete(r.heaps, i, i+1)
	return nil
}

// ResetHeap forgets every region of heap id.
func (r *Registry) ResetHeap(id uint64) error {
	i, _, err := r.heap(id)
	if err != nil {
		return err
	}
	h := r.own(i)
	h.forget(h.regions...)
	h.regions, h.reach = h.regions[:0], h.reach[:0]
	return nil
}

// Add registers regions in heap id: each must be non-empty, inside the heap
// and start where no other region of the heap does. On error none is added.
func (r *Registry) Add(id uint64, regions []Region) error {
	i, h, err := r.heap(id)
	if err != nil {
		return err
	}
	seen := make(map[uint64]struct{}, len(regions))
	for _, g := range regions {
		switch {
		case g.Size == 0:
			return fmt.Errorf("region %s is empty", g.Label())
		case g.Addr < h.base || g.End() < g.Addr || g.End() > h.end():
			return fmt.Errorf("region %s [0x%x, +%s) is not inside heap %q [0x%x, +%s)", g.Label(), g.Addr, bytesize.Format(g.Size), h.name, h.base, bytesize.Format(h.size))
		}
		if _, dup := h.index(g.Addr); dup {
			return fmt.Errorf("region %s starts where registered region %s does", g.Label(), h.regions[must(h.index(g.Addr))].Label())
		}
		if _, dup := seen[g.Addr]; dup {
			return fmt.Errorf("two regions start at 0x%x", g.Addr)
		}
		seen[g.Addr] = struct{}{}
	}
	h = r.own(i)
	h.regions = append(h.regions, regions...)
	slices.SortFunc(h.regions, func(a, b Region) int { return cmp.Compare(a.Addr, b.Addr) })
	h.rebuild()
	return nil
}

func must(i int, _ bool) int { return i }

// Remove unregisters the regions of heap id that start at addrs. On error
// none is removed.
func (r *Registry) Remove(id uint64, addrs []uint64) error {
	i, h, err := r.heap(id)
	if err != nil {
		return err
	}
	drop := make(map[uint64]struct{}, len(addrs))
	for _, a := range addrs {
		if _, ok := h.index(a); !ok {
			return fmt.Errorf("no region of heap %q starts at 0x%x", h.name, a)
		}
		if _, dup := drop[a]; dup {
			return fmt.Errorf("region at 0x%x is unregistered twice", a)
		}
		drop[a] = struct{}{}
	}
	h = r.own(i)
	for _, g := range h.regions {
		if _, ok := drop[g.Addr]; ok {
			h.forget(g)
		}
	}
	h.regions = slices.DeleteFunc(h.regions, func(g Region) bool { _, ok := drop[g.Addr]; return ok })
	h.rebuild()
	return nil
}

// Name renames the regions of heap id that start at each region's Addr. On
// error none is renamed.
func (r *Registry) Name(id uint64, regions []Region) error {
	i, h, err := r.heap(id)
	if err != nil {
		return err
	}
	for _, g := range regions {
		if _, ok := h.index(g.Addr); !ok {
			return fmt.Errorf("no region of heap %q starts at 0x%x", h.name, g.Addr)
		}
	}
	h = r.own(i)
	for _, g := range regions {
		h.regions[must(h.index(g.Addr))].Name = g.Name
	}
	return nil
}

// Regions is a copy of the regions of heap id, by address.
func (r *Registry) Regions(id uint64) ([]Region, error) {
	_, h, err := r.heap(id)
	if err != nil {
		return nil, err
	}
	return slices.Clone(h.regions), nil
}

// Miss is an access to bytes of a heap that no region covers.
type Miss struct {
	Heap string
	// Addr is the first byte of the access that no region covers.
	Addr uint64
	// Nearest is the region closest to Addr; its Size is 0 when the heap
	// has none.
	Nearest Region
	// After is whether Addr is past Nearest's end (rather than before its
	// start), and Distance how far: 0 for the byte right after its end, 1
	// for the byte right before its start.
	After    bool
	Distance uint64
	// Was is the region unregistered last that held Addr, among the
	// heap's last few hundred and not as large as the heap; its Size is 0
	// when there is none.
	Was Region
}

// ErrMiss is matched by every *Miss.
var ErrMiss = errors.New("access outside every registered buffer")

// Error describes the miss.
func (m *Miss) Error() string {
	if m.Was.Size == 0 {
		return m.where()
	}
	return fmt.Sprintf("%s; it was in %s at 0x%x, unregistered since", m.where(), m.Was.Label(), m.Was.Addr)
}

// where places the miss among the heap's regions.
func (m *Miss) where() string {
	if m.Nearest.Size == 0 {
		return fmt.Sprintf("byte 0x%x is in heap %q, which has no registered buffer", m.Addr, m.Heap)
	}
	if m.After {
		return fmt.Sprintf("byte 0x%x in heap %q is in no registered buffer: it is byte %d past the end of %s", m.Addr, m.Heap, m.Distance, m.Nearest.Label())
	}
	return fmt.Sprintf("byte 0x%x in heap %q is in no registered buffer: it is %s before the start of %s", m.Addr, m.Heap, bytesize.Exact(m.Distance), m.Nearest.Label())
}

// Is makes errors.Is(m, ErrMiss) true.
func (m *Miss) Is(target error) bool { return target == ErrMiss }

// Check returns the first byte of [addr, addr+n) that lies in a heap but in
// none of its regions, or nil when there is none.
func (r *Registry) Check(addr, n uint64) *Miss {
	if n == 0 || len(r.heaps) == 0 {
		return nil
	}
	end := addr + n
	if end < addr {
		end = ^uint64(0)
	}
	i, _ := slices.BinarySearchFunc(r.heaps, addr, func(h *heap, a uint64) int { return cmp.Compare(h.end(), a+1) })
	for ; i < len(r.heaps) && r.heaps[i].base < end; i++ {
		h := r.heaps[i]
		if u, ok := h.uncovered(max(addr, h.base), min(end, h.end())); ok {
			return h.miss(u)
		}
	}
	return nil
}

// uncovered finds the first byte of [from, to) no region covers.
func (h *heap) uncovered(from, to uint64) (uint64, bool) {
	for cur := from; cur < to; {
		// Regions starting at or before cur: the furthest of their ends
		// covers [cur, reach) when it lies past cur.
		k, found := h.index(cur)
		if found {
			k++
		}
		if k == 0 || h.reach[k-1] <= cur {
			return cur, true
		}
		cur = h.reach[k-1]
	}
	return 0, false
}

// miss describes uncovered byte u by the region nearest to it.
func (h *heap) miss(u uint64) *Miss {
	m := &Miss{Heap: h.name, Addr: u}
	for i := len(h.gone) - 1; i >= 0; i-- {
		// A region as large as the heap is its owner's upkeep, not a
		// buffer (pool's "cudapool upkeep").
		if g := h.gone[i]; g.Addr <= u && u < g.End() && g.Size < h.size {
			m.Was = g
			break
		}
	}
	k, _ := h.index(u)
	if k > 0 {
		// Every region starting below u ends at or before it; the furthest
		// of those ends is reach[k-1].
		j := k - 1
		for h.regions[j].End() != h.reach[k-1] {
			j--
		}
		m.Nearest, m.After, m.Distance = h.regions[j], true, u-h.regions[j].End()
	}
	if k < len(h.regions) {
		next := h.regions[k]
		if d := next.Addr - u; m.Nearest.Size == 0 || d < m.Distance {
			m.Nearest, m.After, m.Distance = next, false, d
		}
	}
	return m
}

// Containing returns the region that holds addr, the one starting last of
// those that do, and whether there is one: the buffer an access that starts
// at addr belongs to, for messages.
func (r *Registry) Containing(addr uint64) (Region, bool) {
	i, _ := slices.BinarySearchFunc(r.heaps, addr, func(h *heap, a uint64) int { return cmp.Compare(h.end(), a+1) })
	if i == len(r.heaps) || r.heaps[i].base > addr {
		return Region{}, false
	}
	h := r.heaps[i]
	k, found := h.index(addr)
	if found {
		k++
	}
	// Regions before k start at or below addr; reach says whether any of
	// regions[:j+1] ends past it.
	for j := k - 1; j >= 0 && h.reach[j] > addr; j-- {
		if h.regions[j].End() > addr {
			return h.regions[j], true
		}
	}
	return Region{}, false
}
