package pool

import (
	"cmp"
	"slices"

	"github.com/cudapool/cudapool/pinned"
)

// ArenaStats describes one arena.
type ArenaStats struct {
	Reserved  bool   // false when the arena's size option was 0
	Capacity  uint64 // bytes reserved (address space, for a growable arena)
	Mapped    uint64 // bytes of memory behind the arena: Capacity, or what a growable arena has mapped so far
	Used      uint64 // end of the highest placed buffer: the bytes the plan needs
	Peak      uint64 // highest Used since New, across ReleaseAll
	Pending   uint64 // bytes queued, each rounded up to 256
	Requested uint64 // sum of the placed buffers' sizes as requested
	Padding   uint64 // bytes added to placed buffers by rounding up to 256
	Unshared  uint64 // bytes the placed buffers would need if none shared memory
	Saved     uint64 // Unshared - Used: what lifetime sharing saved
	Placed    int    // buffers placed
	Queued    int    // requests waiting for Satisfy
}

// Stats describes the pool.
type Stats struct {
	Device, Host, Managed ArenaStats
	// HostPinning is how the host arena was pinned, after any fallback.
	HostPinning pinned.Method
	Committed   bool
	Closed      bool
}

// Stats returns a snapshot of both arenas.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Committed: p.committed, Closed: p.closed}
	for k, a := range p.arenas {
		if a == nil {
			continue
		}
		as := ArenaStats{
			Reserved:  true,
			Capacity:  a.capacity,
			Mapped:    a.mapped(),
			Used:      a.used,
			Peak:      a.peak,
			Pending:   a.pendingBytes(),
			Requested: a.requested,
			Padding:   a.unshared - a.requested,
			Unshared:  a.unshared,
			Placed:    len(a.placed),
			Queued:    len(a.pending),
		}
		if a.unshared > a.used {
			as.Saved = a.unshared - a.used
		}
		*s.arena(Arena(k)) = as
		if Arena(k) == Host {
			s.HostPinning = a.pinning
		}
	}
	return s
}

// Placement is one placed buffer in a Layout.
type Placement struct {
	Name   string
	Arena  Arena
	Offset uint64
	Size   uint64
	// First and Last are the buffer's steps; a buffer without Live has
	// Whole set and lives for the whole plan.
	First, Last int
	Whole       bool
}

// Layout returns every placed buffer, ordered by arena, offset and first
// step; after Close, none.
func (p *Pool) Layout() []Placement {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	var out []Placement
	for _, a := range p.arenas {
		if a == nil {
			continue
		}
		for _, b := range a.placed {
			pl := Placement{Name: b.name, Arena: b.arena, Offset: b.offset, Size: b.size, First: int(b.first), Last: int(b.last), Whole: !b.hasLife}
			out = append(out, pl)
		}
	}
	slices.SortStableFunc(out, func(x, y Placement) int {
		return cmp.Or(cmp.Compare(x.Arena, y.Arena), cmp.Compare(x.Offset, y.Offset), cmp.Compare(x.First, y.First))
	})
	return out
}

func (s *Stats) arena(a Arena) *ArenaStats {
	switch a {
	case Host:
		return &s.Host
	case Managed:
		return &s.Managed
	}
	return &s.Device
}
