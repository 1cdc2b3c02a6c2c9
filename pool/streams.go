package pool

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cudapool/cudapool/cudart"
)

// WithStreams tells the pool which streams of its device use its buffers:
// ReleaseAll and Close then wait for the work queued on those streams, by
// recording an event on each and waiting for it, rather than for the whole
// device, so two pools on one GPU do not stall each other. Work queued on
// other streams is not waited for: list every stream that touches the pool.
// The runtime must implement cudart.Events. UseStreams adds streams created
// later.
func WithStreams(streams ...cudart.Stream) Option {
	s := slices.Clone(streams)
	return set(func(c *config) { c.streams = s })
}

// UseStreams adds streams to those ReleaseAll and Close wait for (see
// WithStreams). A stream given twice is waited for once.
func (p *Pool) UseStreams(streams ...cudart.Stream) error {
	if err := p.valid(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.alive(); err != nil {
		return err
	}
	return p.addStreams(streams)
}

// addStreams creates an event for each stream not yet known. The caller
// holds p.mu, or New is still building p.
func (p *Pool) addStreams(streams []cudart.Stream) error {
	if len(streams) == 0 {
		return nil
	}
	ev, ok := p.rt.(cudart.Events)
	if !ok {
		return fmt.Errorf("%w: WithStreams needs a runtime with events (cudart.Events); %T has none", ErrInvalidOption, p.rt)
	}
	for _, s := range streams {
		if slices.Contains(p.streams, s) {
			continue
		}
		e, err := ev.EventCreate(p.dev)
		if err != nil {
			return fmt.Errorf("pool: create the event that waits for stream %#x: %w", uintptr(s), err)
		}
		p.streams = append(p.streams, s)
		p.events = append(p.events, e)
	}
	return nil
}

// wait blocks until the work that may use the arenas is done: the work on the
// pool's streams when it was told them, else all the work of the device and,
// when all is set, of the peer devices too. The caller holds p.mu.
func (p *Pool) wait(all bool) error {
	if len(p.streams) == 0 {
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
	ev := p.rt.(cudart.Events) // addStreams checked it
	var errs []error
	for i, s := range p.streams {
		if err := ev.EventRecord(p.dev, p.events[i], s); err != nil {
			errs = append(errs, fmt.Errorf("pool: record the wait on stream %#x: %w", uintptr(s), err))
			continue
		}
		if err := ev.EventSynchronize(p.dev, p.events[i]); err != nil {
			errs = append(errs, fmt.Errorf("pool: wait for stream %#x: %w", uintptr(s), err))
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

// dropEvents destroys the events of the pool's streams. The caller holds p.mu.
func (p *Pool) dropEvents() error {
	if len(p.events) == 0 {
		return nil
	}
	ev := p.rt.(cudart.Events)
	var errs []error
	for _, e := range p.events {
		if err := ev.EventDestroy(p.dev, e); err != nil {
			errs = append(errs, fmt.Errorf("pool: destroy a stream's event: %w", err))
		}
	}
	p.streams, p.events = nil, nil
	return errors.Join(errs...)
}
