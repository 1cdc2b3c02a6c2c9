package pool

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
)

// ReleaseAll drops every request, placed or queued, resets the arenas to
// offset 0 and unlocks a committed pool. It first waits for the holds of
// Buffer.Use that other goroutines have not ended with Done, then for the
// work that may use the buffers, since kernels still in flight may: the streams of
// WithStreams and UseStreams, or else the whole device. If that wait fails,
// nothing is reset. Every handle from before is stale afterwards (ErrReleased). With
// WithTrimOnRelease it then gives the growable arena's memory back; if that
// fails, the pool is released all the same and the error says so. With
// WithGuards it first checks every guard and fills the arenas with
// ReleasedPoison; a damaged guard is reported as a *CorruptedError, and the
// pool is released all the same. The poison is waited for before anything
// is trimmed; if that wait fails, the arenas keep their memory and the
// error says so.
func (p *Pool) ReleaseAll() error {
	if err := p.valid(); err != nil {
		return err
	}
	placed, err := p.release()
	if p.debug && err == nil {
		p.log.Debug("pool: released", zap.Int("device", p.dev), zap.Int("buffers", placed))
	}
	return err
}

func (p *Pool) release() (placed int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.alive(); err != nil {
		return 0, err
	}
	p.stopUsers(releasingGen)
	// The new generation once released; the old one if the wait fails, or
	// a runtime call panics, before the handles are stale.
	defer func() { p.live.Store(p.gen) }()
	if err := p.wait(false); err != nil {
		return 0, fmt.Errorf("pool: before release: %w", err)
	}
	var errs []error
	if err := p.checkGuards(); err != nil && !errors.Is(err, ErrNoGuards) {
		errs = append(errs, fmt.Errorf("pool: released, but: %w", err))
	}
	if err := p.poison(); err != nil {
		errs = append(errs, err)
	}
	if err := p.resetHeaps(); err != nil {
		errs = append(errs, fmt.Errorf("pool: released, but: %w", err))
	}
	p.stepSet = false
	for _, l := range p.arenas {
		if l != nil {
			placed += len(l.placed)
			l.reset()
		}
	}
	p.gen++
	p.committed = false
	// The poison just queued runs before any memory under it is trimmed.
	settled := p.settle()
	if settled != nil {
		errs = append(errs, fmt.Errorf("pool: released, but the arenas keep their memory: %w", settled))
	}
	for _, l := range p.arenas {
		if l != nil {
			if settled != nil {
				continue
			}
			if err := l.mem.release(); err != nil {
				errs = append(errs, fmt.Errorf("pool: released, but: %w", err))
			}
			if p.annot != nil {
				// A trimmed arena's heap shrinks with its mapping.
				if err := p.heapFor(l); err != nil {
					errs = append(errs, fmt.Errorf("pool: released, but: %w", err))
				}
			}
		}
	}
	return placed, errors.Join(errs...)
}
