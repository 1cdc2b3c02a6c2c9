package pool

import "github.com/cudapool/cudapool/pinned"

// ArenaStats describes one arena.
type ArenaStats struct {
	Reserved  bool   // false when the arena's size option was 0
	Capacity  uint64 // bytes reserved (address space, for a growable arena)
	Mapped    uint64 // bytes of memory behind the arena: Capacity, or what a growable arena has mapped so far
	Used      uint64 // end of the highest placed buffer: the bytes the plan needs
	Peak      uint64 // highest Used since New, across ReleaseAll
	Pending   uint64 // bytes queued, each rounded up to 256; 2^64-1 for a queue that asks for more, which Satisfy refuses
	Requested uint64 // sum of the placed buffers' sizes as requested; Satisfy refuses buffers that would take it past 2^64-1
	Padding   uint64 // bytes added to placed buffers by rounding up to 256
	Guards    uint64 // bytes of guard after the placed buffers (WithGuards), padding not included
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

// Stats returns a snapshot of every arena. A nil or zero Pool reports
// itself closed.
func (p *Pool) Stats() Stats {
	if p.valid() != nil {
		return Stats{Closed: true}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{HostPinning: p.hostPinning, Committed: p.committed, Closed: p.closed}
	for k, l := range p.arenas {
		if l != nil {
			*s.of(Arena(k)) = l.stats()
		}
	}
	return s
}

// of is the line of s for arena a.
func (s *Stats) of(a Arena) *ArenaStats {
	return [numArenas]*ArenaStats{Device: &s.Device, Host: &s.Host, Managed: &s.Managed}[a]
}
