package pool

import (
	"errors"
	"fmt"
)

// Step tells the pool which step of its plan the program is at: the steps
// that Live ranges count. It is what makes lifetimes checkable at run time.
// With a memory tool listening (cudart.Annotations: compute-sanitizer, or
// the fake WithMemcheck), only the buffers alive at step stay registered, so
// a kernel or copy that touches a buffer outside its Live range is reported
// as an access to unallocated memory. With WithGuards, the buffers whose
// lifetime ended since the last Step are filled with ReleasedPoison (less
// any bytes a buffer alive at step holds), so a read of a dead buffer sees
// obvious garbage. Buffers without Live are alive at every step.
//
// Steps may go forward or start again at 0 for the next request; ReleaseAll
// forgets the step. A step outside 0..MaxStep is an error wrapping
// ErrInvalidRequest; a call before any buffer is placed, one wrapping
// ErrNotPlaced. Either leaves the pool as it was.
//
// # Caveats
//
// Call Step on the host in program order, after queueing the previous
// step's work: the tool judges queued work by the annotations it was queued
// under. A tool sees addresses, not buffers: a dead buffer's bytes that a
// buffer alive at the step also holds are allocated memory to it, so only
// an access beyond them is reported (guards' poison shows the rest).
func (p *Pool) Step(step int) error {
	if err := p.valid(); err != nil {
		return err
	}
	if step < 0 || step > MaxStep {
		return fmt.Errorf("%w: Step(%d): want a step from 0 to MaxStep (%d)", ErrInvalidRequest, step, MaxStep)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.alive(); err != nil {
		return err
	}
	placed := false
	for _, l := range p.arenas {
		placed = placed || (l != nil && len(l.placed) > 0)
	}
	if !placed {
		return fmt.Errorf("%w: Step(%d): no buffer is placed", ErrNotPlaced, step)
	}
	prev, had := p.step, p.stepSet
	var errs []error
	for _, l := range p.arenas {
		if l == nil || len(l.placed) == 0 {
			continue
		}
		if l.guard > 0 {
			// Poisoned while the ended buffers are still annotated.
			errs = append(errs, p.poisonEnded(l, int32(step), prev, had))
		}
	}
	p.step, p.stepSet = int32(step), true
	for _, l := range p.arenas {
		if l != nil {
			errs = append(errs, p.annotate(l))
		}
	}
	return errors.Join(errs...)
}

// aliveNow reports whether b is in use at the pool's step: always before the
// first Step.
func (p *Pool) aliveNow(b *Buffer) bool {
	return !p.stepSet || b.aliveAt(p.step)
}

// aliveAt reports whether b is in use at step s.
func (b *Buffer) aliveAt(s int32) bool { return !b.hasLife || (b.first <= s && s <= b.last) }

// poisonEnded fills with ReleasedPoison the data of l's buffers that were
// alive at the previous step (every buffer, before the first) and are not at
// step, except bytes a buffer alive at step holds.
func (p *Pool) poisonEnded(l *ledger, step, prev int32, had bool) error {
	ended := func(b *Buffer) bool {
		return b.hasLife && b.last < step && (!had || (b.first <= prev && prev <= b.last))
	}
	var dead []*Buffer
	for _, b := range l.placed {
		if ended(b) {
			dead = append(dead, b)
		}
	}
	if len(dead) == 0 {
		return nil
	}
	alive := newCover(l.placed, func(b *Buffer) bool { return b.aliveAt(step) })
	var errs []error
	for _, b := range dead {
		alive.gaps(b.offset, b.offset+b.size, func(from, to uint64) {
			errs = append(errs, l.fill(p, from, to-from, ReleasedPoison))
		})
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pool: poison the %s arena's ended buffers: %w", l.kind, err)
	}
	return nil
}
