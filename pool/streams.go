package pool

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/streamdev"
)

// WithStreams tells the pool which streams of its device use its buffers:
// ReleaseAll and Close then wait for the work queued on those streams, by
// recording an event on each and waiting for it, rather than for the whole
// device, so two pools on one GPU do not stall each other. Work queued on
// other streams is not waited for: list every stream that touches the pool.
// The runtime must implement cudart.Events. Each stream is checked when
// given, by recording its event on it: one CUDA does not know (never
// created, or destroyed), or one of another device, makes New fail with
// ErrInvalidStream. UseStreams
// adds streams created later, and ForgetStreams drops them.
func WithStreams(streams ...cudart.Stream) Option {
	s := slices.Clone(streams)
	return set(func(c *config) { c.streams = s })
}

// UseStreams adds streams to those ReleaseAll and Close wait for (see
// WithStreams). A stream given twice is waited for once. A stream CUDA does
// not know, or one of another device, is refused with ErrInvalidStream, and
// then none is added.
func (p *Pool) UseStreams(streams ...cudart.Stream) error {
	return p.locked(func() error { return p.addStreams(streams, true) })
}

// ForgetStreams drops streams from those ReleaseAll and Close wait for: call
// it before destroying a stream the pool waits for. A stream destroyed
// first makes ReleaseAll fail with ErrInvalidStream, naming it, and reset
// nothing; ForgetStreams of it then lets the next ReleaseAll go on. Once no
// stream is left, the pool waits for the whole device again. A stream the
// pool does not wait for is refused with ErrInvalidStream, and then none is
// dropped. After Close there is nothing left to forget and it returns nil,
// so that cleanups may run in either order; but for the stream of an event
// a failed Close kept, which it destroys, as Close would have.
func (p *Pool) ForgetStreams(streams ...cudart.Stream) error {
	if err := p.valid(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		kept := slices.DeleteFunc(slices.Clone(streams), func(s cudart.Stream) bool { return !slices.Contains(p.streams, s) })
		return p.forgetStreams(kept)
	}
	if err := p.alive(); err != nil {
		return err
	}
	return p.forgetStreams(streams)
}

// adoptStreams is UseStreams for streams NewSlots has just made, which CUDA
// knows: no event is recorded to check them, which would queue work on
// each.
func (p *Pool) adoptStreams(streams []cudart.Stream) error {
	return p.locked(func() error { return p.addStreams(streams, false) })
}

// forgetStreams is ForgetStreams with p.mu held.
func (p *Pool) forgetStreams(streams []cudart.Stream) error {
	for _, s := range streams {
		if !slices.Contains(p.streams, s) {
			return fmt.Errorf("%w: ForgetStreams(%#x): the pool does not wait for that stream", ErrInvalidStream, uintptr(s))
		}
	}
	ev := p.rt.(cudart.Events) // a pool with streams has events
	var errs []error
	for _, s := range streams {
		i := slices.Index(p.streams, s)
		if i < 0 {
			continue // given twice
		}
		if err := ev.EventDestroy(p.dev, p.events[i]); err != nil {
			errs = append(errs, fmt.Errorf("pool: destroy the event of stream %#x, which the pool still waits for: %w", uintptr(s), err))
			continue
		}
		p.streams = slices.Delete(p.streams, i, i+1)
		p.events = slices.Delete(p.events, i, i+1)
	}
	return errors.Join(errs...)
}

// addStreams creates an event for each stream not yet known and, when
// check is set, checks the stream by recording the event on it; if one
// fails, it adds none. The caller holds p.mu, or New is still building p.
func (p *Pool) addStreams(streams []cudart.Stream, check bool) error {
	if len(streams) == 0 {
		return nil
	}
	ev, ok := p.rt.(cudart.Events)
	if !ok {
		return fmt.Errorf("%w: WithStreams needs a runtime with events (cudart.Events); %T has none", ErrInvalidOption, p.rt)
	}
	var added []cudart.Stream
	var events []cudart.Event
	// A set, not a search of the lists: NewSlots adds a stream per slot.
	known := make(map[cudart.Stream]struct{}, len(p.streams)+len(streams))
	for _, s := range p.streams {
		known[s] = struct{}{}
	}
	err := func() error {
		for _, s := range streams {
			if _, ok := known[s]; ok {
				continue
			}
			known[s] = struct{}{}
			e, err := ev.EventCreate(p.dev)
			if err != nil {
				return fmt.Errorf("pool: create the event that waits for stream %#x: %w", uintptr(s), err)
			}
			events = append(events, e)
			if !check {
				added = append(added, s)
				continue
			}
			if err := p.onDevice(s); err != nil {
				return err
			}
			if err := ev.EventRecord(p.dev, e, s); err != nil {
				return streamError("check", s, err)
			}
			added = append(added, s)
		}
		return nil
	}()
	if err != nil {
		for _, e := range events {
			if derr := ev.EventDestroy(p.dev, e); derr != nil {
				err = errors.Join(err, fmt.Errorf("pool: destroy a stream's event: %w", derr))
			}
		}
		return err
	}
	p.streams = append(p.streams, added...)
	p.events = append(p.events, events...)
	return nil
}

// onDevice refuses s unless it is a stream of the pool's device, as far as
// the runtime can tell (cudart.Streams.StreamDevice; a runtime before CUDA
// 12.8 cannot for a stream it did not make, which is taken).
func (p *Pool) onDevice(s cudart.Stream) error {
	d, known, err := streamdev.Of(p.rt, p.dev, s)
	switch {
	case !known:
		return nil
	case err != nil:
		return streamError("check", s, err)
	case d != p.dev:
		return fmt.Errorf("%w: stream %#x is device %d's, the pool device %d's", ErrInvalidStream, uintptr(s), d, p.dev)
	}
	return nil
}

// streamError is the error of a call on stream s that failed: one wrapping
// ErrInvalidStream when CUDA does not know the stream.
func streamError(what string, s cudart.Stream, err error) error {
	if errors.Is(err, cudart.ErrInvalidResourceHandle) {
		return fmt.Errorf("%w: %s stream %#x: CUDA does not know it (never created, or destroyed); ForgetStreams drops it: %w", ErrInvalidStream, what, uintptr(s), err)
	}
	return fmt.Errorf("pool: %s stream %#x: %w", what, uintptr(s), err)
}

// wait blocks until the work that may use the arenas is done: the work on the
// pool's streams when it was told them, else all the work of the device and,
// when all is set, of the peer devices too. The caller holds p.mu.
func (p *Pool) wait(all bool) error {
	if len(p.streams) == 0 {
		return p.waitDevices(all)
	}
	ev := p.rt.(cudart.Events) // addStreams checked it
	var errs []error
	for i, s := range p.streams {
		if err := ev.EventRecord(p.dev, p.events[i], s); err != nil {
			errs = append(errs, streamError("record the wait on", s, err))
			continue
		}
		if err := ev.EventSynchronize(p.dev, p.events[i]); err != nil {
			errs = append(errs, fmt.Errorf("pool: wait for stream %#x: %w", uintptr(s), err))
		}
	}
	return errors.Join(errs...)
}

// waitDevices waits for all the work of the pool's device and, when all is
// set, of the peer devices too. The caller holds p.mu.
func (p *Pool) waitDevices(all bool) error {
	devs := []int{p.dev}
	if all {
		devs = append(devs, p.peers...)
	}
	var errs []error
	for _, d := range devs {
		if err := p.rt.DeviceSynchronize(d); err != nil {
			errs = append(errs, fmt.Errorf("pool: wait for device %d: %w", d, err))
		} else if d == p.dev {
			p.queued = false
		}
	}
	return errors.Join(errs...)
}

// settle waits for the device work the pool queued itself, the guard and
// poison fills on the legacy default stream, before memory under it is
// unmapped, trimmed or freed: a fill that ran after would fault the context.
// The caller holds p.mu.
func (p *Pool) settle() error {
	if !p.queued {
		return nil
	}
	if err := p.rt.DeviceSynchronize(p.dev); err != nil {
		return fmt.Errorf("pool: wait for the pool's own fills on device %d: %w", p.dev, err)
	}
	p.queued = false
	return nil
}

// dropEvents destroys the events of the pool's streams, keeping with its
// stream each event CUDA refuses to destroy, for the next call to retry.
// The caller holds p.mu.
func (p *Pool) dropEvents() error {
	if len(p.events) == 0 {
		return nil
	}
	ev := p.rt.(cudart.Events)
	var errs []error
	streams, events := p.streams[:0], p.events[:0]
	for i, e := range p.events {
		if err := ev.EventDestroy(p.dev, e); err != nil {
			errs = append(errs, fmt.Errorf("pool: destroy the event of stream %#x (kept, to retry): %w", uintptr(p.streams[i]), err))
			streams, events = append(streams, p.streams[i]), append(events, e)
		}
	}
	clear(p.streams[len(streams):])
	clear(p.events[len(events):])
	p.streams, p.events = streams, events
	return errors.Join(errs...)
}
