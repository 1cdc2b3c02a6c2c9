package cudarttest

import (
	"fmt"
	"sort"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// The fake's virtual memory: physical memory from MemCreate, the mappings
// of reservations to it, and how the calls of vmm.go find them.

// physical is memory from MemCreate. It is freed, and uncharged from its
// device, once it is released and no mapping uses it, as in CUDA.
type physical struct {
	h        cudart.PhysHandle
	device   int
	size     uint64
	types    cudart.HandleType // requestedHandleTypes
	mem      sparse
	maps     int
	released bool
	seq      int
}

func (p *physical) describe() string {
	s := fmt.Sprintf("physical memory handle %d (%s on device %d) from cuMemCreate (call #%d)", uint64(p.h), bytesize.Format(p.size), p.device, p.seq)
	if p.types != 0 {
		s += ", exportable as " + p.types.String()
	}
	if p.released {
		s += ", released but still mapped"
	}
	return s
}

// mapping is a range of a reservation mapped to physical memory.
type mapping struct {
	va, size uint64
	phys     *physical
	off      uint64
	access   uint64 // bit d set once device d may access it
	seq      int
}

func (m *mapping) end() uint64 { return m.va + m.size }

func (m *mapping) describe() string {
	return fmt.Sprintf("mapping %s (%s of handle %d at offset %s) from cuMemMap (call #%d)", cudart.DevicePtr(m.va), bytesize.Format(m.size), uint64(m.phys.h), bytesize.Format(m.off), m.seq)
}

// resolveMapped appends the spans behind [a, a+n) of reservation r: every
// byte must be mapped and accessible to device.
func (f *Fake) resolveMapped(buf []span, r *region, a, n uint64, device int) ([]span, *failure) {
	bit := uint64(1) << device
	i := sort.Search(len(r.maps), func(i int) bool { return r.maps[i].end() > a })
	for cur, end := a, a+n; cur < end; i++ {
		if i == len(r.maps) || r.maps[i].va > cur {
			return buf, invalid("%s is reserved (%s) but not mapped", cudart.DevicePtr(cur), r.describe())
		}
		m := r.maps[i]
		if m.access&bit == 0 {
			return buf, fail(700, "%s is in %s but device %d was never given access with cuMemSetAccess", cudart.DevicePtr(cur), m.describe(), device)
		}
		k := min(end, m.end()) - cur
		buf = append(buf, span{b: &m.phys.mem, off: m.off + cur - m.va, n: k})
		cur += k
	}
	return buf, nil
}

// wholeMappings finds the mappings [i, j) of one reservation that make up
// exactly [a, a+size): the range starts where a mapping starts, ends where
// one ends, and has no hole.
func (f *Fake) wholeMappings(a, size uint64) (r *region, i, j int, x *failure) {
	if size == 0 {
		return nil, 0, 0, invalid("size 0")
	}
	r, x = f.reservation(a, size)
	if x != nil {
		return nil, 0, 0, x
	}
	i = sort.Search(len(r.maps), func(i int) bool { return r.maps[i].end() > a })
	cur := a
	for j = i; cur < a+size; j++ {
		if j == len(r.maps) || r.maps[j].va > cur {
			return nil, 0, 0, invalid("%s is not mapped", cudart.DevicePtr(cur))
		}
		cur = r.maps[j].end()
	}
	if r.maps[i].va != a || cur != a+size {
		return nil, 0, 0, invalid("range [%s, +%s) covers part of a mapping; it must cover whole mappings", cudart.DevicePtr(a), bytesize.Format(size))
	}
	return r, i, j, nil
}

// reservation finds the reservation that holds all of [a, a+size).
func (f *Fake) reservation(a, size uint64) (*region, *failure) {
	r := f.containing(a)
	if r == nil || r.kind != kindReservation {
		return nil, invalid("%s is not in a range from cuMemAddressReserve", cudart.DevicePtr(a))
	}
	if size > r.end()-a {
		return nil, invalid("range [%s, +%s) runs past the end of %s", cudart.DevicePtr(a), bytesize.Format(size), r.describe())
	}
	return r, nil
}

// handle finds a live, unreleased physical handle.
func (f *Fake) handle(h cudart.PhysHandle) (*physical, *failure) {
	p := f.phys[h]
	switch {
	case p == nil:
		return nil, invalid("handle %d is not from cuMemCreate, or was freed", uint64(h))
	case p.released:
		return nil, invalid("handle %d was released", uint64(h))
	}
	return p, nil
}

// collect frees p once it is released and unmapped.
func (f *Fake) collect(p *physical) {
	if p.released && p.maps == 0 {
		delete(f.phys, p.h)
		f.devs[p.device].used -= p.size
	}
}

// granules checks that v is a multiple of the granularity, and non-zero
// unless zeroOK.
func (f *Fake) granules(what string, v uint64, zeroOK bool) *failure {
	if (v == 0 && !zeroOK) || !align.Is(v, f.opts.granularity) {
		return invalid("%s %s (0x%x) is not a non-zero multiple of the granularity %s", what, bytesize.Format(v), v, bytesize.Format(f.opts.granularity))
	}
	return nil
}
