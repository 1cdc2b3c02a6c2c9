package pool

import (
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/cudart"
)

// SubAllocated declares that the buffer's owner carves it into parts of its
// own (a KV cache's pages) and tells memory tools which parts are in use
// with Buffer.Annotate: the pool registers no region for the buffer, only
// the parts its owner gives, so that an access to a part not in use is
// reported as one to unallocated memory.
func SubAllocated() WantOption { return subAllocatedOption{} }

type subAllocatedOption struct{}

func (subAllocatedOption) applyWant(r request) (request, error) {
	r.sub = true
	return r, nil
}

// Annotate registers regions, parts of a placed buffer requested with
// SubAllocated, with the memory tool listening (cudart.Annotations:
// compute-sanitizer, or the fake WithMemcheck), in place of the parts the
// last call gave: until the next call, an access to the buffer's bytes
// outside them is reported. Each region must lie inside the buffer, at its
// device address (Ptr). With no tool listening, Annotate only checks its
// arguments. ReleaseAll forgets the parts with the buffer.
//
// An error wraps ErrInvalidRequest (a buffer not requested with
// SubAllocated, or a region outside it), ErrNotPlaced, ErrReleased or
// ErrClosed, or is the tool's refusal.
func (b *Buffer) Annotate(regions []cudart.MemRegion) error {
	if err := b.lock(); err != nil {
		return err
	}
	defer b.p.mu.Unlock()
	if !b.sub {
		return fmt.Errorf("%w: Annotate: %s was not requested with SubAllocated", ErrInvalidRequest, b.label())
	}
	l := b.p.arenas[b.arena]
	start := b.annotStart()
	for _, r := range regions {
		if r.Size == 0 || r.Addr < start || uint64(r.Addr-start) >= b.size || r.Size > b.size-uint64(r.Addr-start) {
			return fmt.Errorf("%w: Annotate: region %v is not inside %s [%s, +%d B)", ErrInvalidRequest, r, b.label(), start, b.size)
		}
	}
	if b.p.annot == nil {
		return nil
	}
	if l.owned == nil {
		l.owned = make(map[*Buffer][]cudart.MemRegion)
	}
	l.owned[b] = slices.Clone(regions)
	return b.p.annotate(l)
}

// annotStart is the address memory tools know b's first byte by: its
// arena's registered address (a host arena's host address) plus b's offset.
// b is placed, and stays where it is until ReleaseAll.
func (b *Buffer) annotStart() cudart.DevicePtr {
	return b.p.arenas[b.arena].annotBase().Add(b.offset)
}
