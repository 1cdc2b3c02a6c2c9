package pool

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/cudart"
)

// Memory tools (cudart.Annotations: the fake WithMemcheck, compute-sanitizer
// through NVTX) see a held slot's buffers as they see a pool's: each a
// region named after the buffer and its slot ("A (slot 0)"), laid out for
// the profile the slot was acquired with, and each attachment's scratch a
// region of its own. A kernel, copy or GEMM that runs past one of a slot's
// buffers into another, or into the scratch, is then reported at the access,
// naming the buffer, as one past a pool's buffer is. The slots' regions are
// requested SubAllocated: the pool registers none for them, the Slots
// register the parts. A slot is annotated at NewSlots (its scratch only) and
// again by an Acquire that holds it for another profile than its last; a
// released slot keeps its last profile's regions, since work it queued may
// still run. With no tool listening none of this runs.

// handOut is the Slot of sl, held for pr, its buffers annotated for pr when
// a tool listens. If the tool refuses them, sl is given back and the error
// returned: no slot is taken.
func (s *Slots) handOut(sl *slot, pr *planned) (Slot, error) {
	out := Slot{s: sl, prof: pr, gen: sl.gen.Load()}
	if s.p.annot == nil || sl.annotated == pr {
		return out, nil
	}
	if err := s.annotateSlot(sl, pr); err != nil {
		return Slot{}, errors.Join(fmt.Errorf("pool: acquire slot %d for profile %q: annotate its buffers: %w", sl.index, pr.name, err), s.Release(out))
	}
	return out, nil
}

// annotateSlot registers sl's buffers as pr lays them out and its
// attachments' scratch as the parts of its slot regions. Only the slot's
// holder calls it.
func (s *Slots) annotateSlot(sl *slot, pr *planned) error {
	want := s.slotRegions(sl, pr)
	for k, buf := range sl.regions {
		if buf == nil {
			continue
		}
		if err := buf.Annotate(want[k]); err != nil {
			return err
		}
	}
	sl.annotated = pr
	return nil
}

// slotRegions are the regions of sl in each arena: pr's buffers (none for
// a nil pr) and the attachments' scratch.
func (s *Slots) slotRegions(sl *slot, pr *planned) [numArenas][]cudart.MemRegion {
	var want [numArenas][]cudart.MemRegion
	if pr != nil {
		for _, b := range pr.bufs {
			name := fmt.Sprintf("%s (slot %d)", requestName(b.name, b.size), sl.index)
			want[b.arena] = append(want[b.arena], cudart.MemRegion{Addr: sl.regions[b.arena].annotStart().Add(b.offset), Size: b.size, Name: name})
		}
	}
	for i, at := range s.scratch {
		if at.bytes != 0 {
			name := fmt.Sprintf("%T scratch (slot %d)", s.attach[i], sl.index)
			want[Device] = append(want[Device], cudart.MemRegion{Addr: sl.regions[Device].annotStart().Add(at.off), Size: at.bytes, Name: name})
		}
	}
	return want
}

// annotateScratch registers every slot's scratch, when a tool listens and
// there is some: a slot's attachment may use it before any request holds
// the slot. It tells the tool once for all the slots, as NewSlots may make
// thousands.
func (s *Slots) annotateScratch() error {
	if s.p.annot == nil || !slices.ContainsFunc(s.scratch, func(at scratchAt) bool { return at.bytes != 0 }) {
		return nil
	}
	return s.p.locked(func() error {
		l := s.p.arenas[Device]
		if l.owned == nil {
			l.owned = make(map[*Buffer][]cudart.MemRegion, len(s.slots))
		}
		for i := range s.slots {
			sl := &s.slots[i]
			l.owned[sl.regions[Device]] = s.slotRegions(sl, nil)[Device]
		}
		return wrapf(s.p.annotate(l), "pool: annotate the slots' scratch")
	})
}
