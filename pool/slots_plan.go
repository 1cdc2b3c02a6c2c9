package pool

import (
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/internal/checked"
)

// planLayout checks layout and plans each profile.
func planLayout(layout SlotLayout) ([]*planned, error) {
	if len(layout.Profiles) == 0 {
		return nil, fmt.Errorf("%w: NewSlots: the layout has no profile; declare the request's buffers with NewProfile", ErrInvalidRequest)
	}
	sh := layout.Shared
	if sh != nil {
		for _, b := range sh.bufs {
			if b.r.hasLife {
				return nil, fmt.Errorf("%w: shared %s %s: shared buffers live as long as the slots; Live is for a profile's buffers", ErrInvalidRequest, b.arena, b.r.label())
			}
		}
	}
	out := make([]*planned, 0, len(layout.Profiles))
	if sh != nil && slices.Contains(layout.Profiles, sh) {
		// Its Refs would resolve to the shared copy in every slot.
		return nil, fmt.Errorf("%w: NewSlots: profile %q is both Shared and one of Profiles; a buffer is either shared by every request or one request's own", ErrInvalidRequest, sh.name)
	}
	seen := make(map[string]bool, len(layout.Profiles))
	for i, pr := range layout.Profiles {
		switch {
		case pr == nil:
			return nil, fmt.Errorf("%w: NewSlots: SlotLayout.Profiles[%d] is nil", ErrInvalidRequest, i)
		case len(pr.bufs) == 0:
			return nil, fmt.Errorf("%w: NewSlots: profile %q declares no buffer", ErrInvalidRequest, pr.name)
		case seen[pr.name]:
			return nil, fmt.Errorf("%w: NewSlots: two profiles are named %q", ErrInvalidRequest, pr.name)
		}
		seen[pr.name] = true
		if sh != nil {
			for _, b := range pr.bufs {
				if b.r.name != "" && sh.find(b.r.name) >= 0 {
					return nil, fmt.Errorf("%w: NewSlots: %q is both a shared buffer and one of profile %q", ErrInvalidRequest, b.r.name, pr.name)
				}
			}
		}
		p, err := planProfile(pr, i)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// arenaBytes is the size of the kind arena: the shared buffers, then n
// slot regions.
func (s *Slots) arenaBytes(kind Arena, n int) (uint64, error) {
	var shared uint64
	if s.shared != nil {
		for _, b := range s.shared.bufs {
			if b.arena != kind {
				continue
			}
			var ok bool
			if shared, ok = checked.Add(shared, alignedSize(b.r.size)); !ok {
				return 0, fmt.Errorf("%w: NewSlots: the shared %s buffers add up past 2^64 B", ErrInvalidOption, kind)
			}
		}
	}
	s.sharedBytes[kind] = shared
	if s.stride[kind] == 0 {
		return shared, nil
	}
	slots, okSlots := checked.Mul(uint64(n), s.stride[kind])
	total, okTotal := checked.Add(shared, slots)
	if !okSlots || !okTotal {
		return 0, fmt.Errorf("%w: NewSlots: %d slots of %d B and %d B shared overflow the %s arena's size", ErrInvalidOption, n, s.stride[kind], shared, kind)
	}
	return total, nil
}
