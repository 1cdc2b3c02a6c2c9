package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Acquire returns a free slot laid out for profile, in O(1): the profile's
// offsets were planned by NewSlots. A slot is free once the work queued on
// its stream before its last Release has finished: Release hands on the
// slots whose work is done, and Acquire asks CUDA once, without waiting,
// about the oldest of the others when no free slot is left. When no slot
// is free it waits, behind the calls already waiting (FIFO), until one is,
// the context is done, or the Slots close. A MultiSlots' AcquireGroup
// waiting for another slot index holds back no free slot.
//
// When it returns an error no slot is taken, and none is lost. The errors:
//   - the context's, wrapped (errors.Is matches context.Canceled or
//     context.DeadlineExceeded);
//   - ErrClosed, from Close on, or on Slots NewSlots did not make;
//   - ErrUnknownProfile, for a profile NewSlots was not given;
//   - ErrDeviceReset, once the device was reset (cudaDeviceReset through
//     cudart): the slots' memory and streams are gone; Close them;
//   - a *cudart.Error, wrapped, when CUDA cannot say whether a released
//     slot's work has finished (cudaStreamQuery, or the cudaStreamSynchronize
//     of a slot drained for a waiter, failed): after a fault on the device,
//     which makes every later call fail too. The slot stays queued, to be
//     asked about again; an Acquire that waits gets the error of at most one
//     such failure, so it never waits on a device that cannot answer;
//   - the memory tool's refusal, wrapped, when one listens
//     (cudart.Annotations): Acquire tells it where the profile's buffers
//     are in the slot, each a region named after the buffer and the slot
//     ("A (slot 0)"), so that an access that runs past one of them into
//     the slot's other bytes is reported, naming the buffer. With no tool
//     listening it makes no such call.
//
// The Slot must be given back with Release, whatever happens to the request:
// defer it.
func (s *Slots) Acquire(ctx context.Context, profile string) (Slot, error) {
	if err := s.valid(); err != nil {
		return Slot{}, err
	}
	pr, ok := s.byName[profile]
	if !ok {
		return Slot{}, s.unknownProfile(profile)
	}
	if err := ctx.Err(); err != nil {
		return Slot{}, fmt.Errorf("pool: acquire a slot for profile %q: %w", profile, err)
	}
	if s.p.reset.Reset() && !s.closedFlag.Load() {
		return Slot{}, s.resetError(pr)
	}
	sl, w, err := s.take(pr)
	if err != nil {
		return Slot{}, err
	}
	if w != nil {
		if sl, err = s.wait(ctx, pr, w); err != nil {
			return Slot{}, err
		}
	}
	return s.handOut(sl, pr)
}

// resetError is Acquire's error once the device was reset.
func (s *Slots) resetError(pr *planned) error {
	return fmt.Errorf("%w: acquire a slot for profile %q: device %d was reset since NewSlots, which freed the slots' memory and destroyed their streams; Close the slots", ErrDeviceReset, pr.name, s.dev)
}

// take hands out a free slot, or the oldest released one if its stream
// turns out idle, or else queues a waiter. The lock is let go for the
// question to CUDA; the slot asked about is meanwhile in neither queue.
func (s *Slots) take(pr *planned) (*slot, *waiter, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: acquire a slot for profile %q", ErrClosed, pr.name)
	}
	if sl := s.takeReady(pr); sl != nil {
		s.mu.Unlock()
		return sl, nil, nil
	}
	if len(s.waiters) == 0 && s.draining.n > 0 {
		// The oldest release is the likeliest to have finished.
		d := s.draining.pop()
		s.asking++
		s.mu.Unlock()
		return s.takeIfIdle(pr, d)
	}
	w := s.queue(pr)
	s.mu.Unlock()
	return nil, w, nil
}

// takeReady holds the last slot made ready for pr, or returns nil when
// none is. A ready slot is one no waiter queued takes (give): the waiters
// queued, if any, are a MultiSlots' AcquireGroups waiting for another
// slot index, or calls served elsewhere. The caller holds s.mu.
func (s *Slots) takeReady(pr *planned) *slot {
	sl, ok := pop(&s.ready)
	if !ok {
		return nil
	}
	s.hold(sl, pr)
	return sl
}

// takeIfIdle holds d for pr if its stream is idle; otherwise d goes back to
// the head of the draining queue and the caller waits. A panic in the
// runtime puts d back all the same.
func (s *Slots) takeIfIdle(pr *planned, d *slot) (sl *slot, w *waiter, err error) {
	idle, answered := false, false
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.doneAsking()
		if answered && idle && !s.closed {
			s.hold(d, pr)
			sl = d
			return
		}
		s.draining.pushFront(d)
		switch {
		case answered && s.closed:
			err = fmt.Errorf("%w: acquire a slot for profile %q", ErrClosed, pr.name)
		case answered && err == nil:
			// A slot freed while CUDA was asked is not left ready
			// behind a waiter that would take it.
			if sl = s.takeReady(pr); sl == nil {
				w = s.queue(pr)
			}
		default:
			s.wakeIfWaiting()
		}
	}()
	idle, err = s.sm.StreamQuery(s.dev, d.stream)
	answered = true
	if err != nil {
		err = fmt.Errorf("pool: ask whether slot %d's released work has finished: %w", d.index, err)
	}
	return nil, nil, err
}

// doneAsking counts one question to CUDA about a slot's stream answered, or
// abandoned by a panic. The caller holds s.mu.
func (s *Slots) doneAsking() {
	s.asking--
	if s.asking == 0 {
		s.settled.Broadcast()
	}
}

// hold counts sl as held with pr, and as one acquisition. The caller holds
// s.mu.
func (s *Slots) hold(sl *slot, pr *planned) {
	s.assign(sl, pr)
	sl.acquisitions++
	pr.acquisitions++
}

// assign marks sl held with pr: from the moment it is handed to a waiter,
// so that Stats count it in use. The caller holds s.mu.
func (s *Slots) assign(sl *slot, pr *planned) {
	sl.held = pr
	pr.inUse++
}

// unassign undoes assign. The caller holds s.mu.
func (s *Slots) unassign(sl *slot) {
	sl.held.inUse--
	sl.held = nil
}

// wait blocks until w is handed a slot, ctx is done or the Slots close. A
// slot handed over is already counted held and acquired by the giver, so
// that a woken call takes s.mu again only if its wait ended otherwise too.
func (s *Slots) wait(ctx context.Context, pr *planned, w *waiter) (*slot, error) {
	start := time.Since(s.born)
	if !woken(ctx, w.ch) {
		return s.waitEnded(pr, w, ctx.Err())
	}
	// Received: w is the slot's until its Release, which recycles it, and
	// no one writes it meanwhile.
	if sl := w.slot; sl != nil && !s.closedFlag.Load() {
		// The giver saw no reset of the device.
		waited := int64(time.Since(s.born) - start)
		sl.waited.Add(waited)
		pr.waited.Add(waited)
		return sl, nil
	}
	return s.waitEnded(pr, w, nil)
}

// waitEnded is wait's end when w got no slot, or one it cannot keep: its
// context was done or the Slots closed as the slot was handed over. A
// waiter handed nothing and no error was told of a reset of the device.
func (s *Slots) waitEnded(pr *planned, w *waiter, cancelled error) (*slot, error) {
	next, err := s.endWait(pr, w, cancelled)
	next.wake()
	return nil, err
}

// endWait is waitEnded's part under s.mu. It returns the waiter handed the
// slot w could not keep, to be woken once s.mu is let go.
func (s *Slots) endWait(pr *planned, w *waiter, cancelled error) (next *waiter, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, err := w.slot, w.err
	if sl != nil {
		// Not this call's.
		next = s.unhold(sl, true)
	}
	switch {
	case cancelled != nil:
		if !w.done {
			s.waiters = slices.DeleteFunc(s.waiters, func(x *waiter) bool { return x == w })
		}
		err = fmt.Errorf("pool: acquire a slot for profile %q: %w", pr.name, cancelled)
	case err == nil && s.closed:
		err = fmt.Errorf("%w: acquire a slot for profile %q", ErrClosed, pr.name)
	case err == nil:
		err = s.resetError(pr)
	}
	if cancelled == nil || !w.done {
		// Its channel is empty and stays so. A cancelled waiter handed
		// something may yet be woken by its giver: it is left to the
		// garbage collector.
		s.recycle(w)
	}
	return next, err
}

// unhold undoes the count of sl as held and acquired (and as waited for,
// when it was handed to a waiter), for a call that cannot keep it, and
// gives it to the next waiter, returned to be woken, or makes it ready.
// The caller holds s.mu.
func (s *Slots) unhold(sl *slot, waited bool) *waiter {
	pr := sl.held
	sl.handedTo = nil
	sl.acquisitions--
	pr.acquisitions--
	if waited {
		sl.waits--
		pr.waits--
	}
	s.unassign(sl)
	if s.closed {
		s.ready = append(s.ready, sl)
		return nil
	}
	return s.give(sl, s.p.reset.Reset())
}

// unknownProfile says which profiles there are.
func (s *Slots) unknownProfile(name string) error {
	names := make([]string, len(s.profiles))
	for i, p := range s.profiles {
		names[i] = fmt.Sprintf("%q", p.name)
	}
	return fmt.Errorf("%w: %q; the slots have %s", ErrUnknownProfile, name, strings.Join(names, ", "))
}
