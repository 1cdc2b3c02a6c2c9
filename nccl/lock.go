package nccl

import (
	"cmp"
	"fmt"
	"slices"
)

// lockAll locks comms (see lockSorted) and returns what unlocks them.
func lockAll(comms []*Comm) (unlock func(), err error) {
	sorted := sortUnique(nil, comms)
	if err := lockSorted(sorted); err != nil {
		return nil, err
	}
	return func() { unlockSorted(sorted) }, nil
}

// sortUnique appends comms to dst[:0] in the order of their locks, once
// each.
func sortUnique(dst, comms []*Comm) []*Comm {
	dst = append(dst[:0], comms...)
	slices.SortFunc(dst, func(a, b *Comm) int { return cmp.Compare(a.id, b.id) })
	return slices.Compact(dst)
}

// lockSorted locks the communicators of sortUnique in its order, so that
// groups over the same communicators never deadlock, and refuses a closed
// one, leaving none locked.
func lockSorted(sorted []*Comm) error {
	for i, c := range sorted {
		c.mu.Lock()
		if c.raw == 0 {
			unlockSorted(sorted[:i+1])
			return fmt.Errorf("%w: %s", ErrClosed, c)
		}
	}
	return nil
}

func unlockSorted(sorted []*Comm) {
	for _, c := range sorted {
		c.mu.Unlock()
	}
}
