package pool

import (
	"errors"
	"fmt"
)

// Close wakes every Acquire still waiting with ErrClosed, waits for the work
// queued on every slot's stream (and the streams of WithStreams), frees the
// arenas, and destroys the slots' streams. A Slot still held is
// unusable afterwards; its Release returns ErrClosed. Close is idempotent: if
// freeing failed, the error is returned and a later Close tries again what
// it could not free. After a reset of the device (cudaDeviceReset through
// cudart), which destroyed the streams and freed the arenas, Close forgets
// them, destroys nothing, and returns an error matching ErrDeviceReset once,
// as the pool's Close does.
func (s *Slots) Close() error {
	if err := s.valid(); err != nil {
		return err
	}
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	s.closedFlag.Store(true)
	for _, w := range s.waiters {
		w.finish(nil, ErrClosed)
	}
	s.waiters = s.waiters[:0]
	// A Release or Acquire asking about a slot's stream puts it back
	// before the stream may be destroyed. A Release that did not see
	// closedFlag set has set its slot's releasing: closedFlag is stored
	// before releasing is read here, and a Release sets releasing before it
	// reads closedFlag.
	for s.asking > 0 || s.releasingAny() {
		s.settled.Wait()
	}
	s.mu.Unlock()
	if first {
		close(s.stop)
	}
	<-s.stopped
	err := errors.Join(s.closeAttached(), s.p.Close())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p.reset.Reset() {
		for i := range s.slots {
			s.slots[i].freed = true
		}
		if !s.resetSaid && !errors.Is(err, ErrDeviceReset) {
			err = errors.Join(fmt.Errorf("%w: device %d was reset since NewSlots: the slots' streams went with it", ErrDeviceReset, s.dev), err)
		}
		s.resetSaid = true
		return err
	}
	return errors.Join(err, s.destroyStreams())
}

// releasingAny reports whether a Release is asking CUDA about a slot's
// stream or about to. The caller holds s.mu.
func (s *Slots) releasingAny() bool {
	for i := range s.slots {
		if s.slots[i].releasing.Load() {
			return true
		}
	}
	return false
}

// takeBack undoes a NewSlots that failed half way: the pool first, which
// waits for the slots' streams, then the streams.
func (s *Slots) takeBack() error {
	return errors.Join(s.closeAttached(), s.p.Close(), s.destroyStreams())
}

// destroyStreams destroys the slots' streams not yet destroyed, keeping
// those CUDA refuses for the next call.
func (s *Slots) destroyStreams() error {
	var errs []error
	for i := range s.slots {
		sl := &s.slots[i]
		if !sl.freed {
			err := s.sm.StreamDestroy(s.dev, sl.stream)
			errs = append(errs, wrapf(err, "pool: destroy the stream of slot %d", i))
			sl.freed = err == nil
		}
	}
	return errors.Join(errs...)
}
