package pool

import (
	"fmt"

	"github.com/dustin/go-humanize"
	"go.uber.org/zap"
)

// Satisfy places every queued request. It first checks that both arenas can
// hold everything already placed plus everything queued; if one cannot, it
// places nothing, keeps the queue, and returns an *ExhaustedError. Placed
// buffers never move.
func (p *Pool) Satisfy() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	return p.satisfyLocked()
}

func (p *Pool) satisfyLocked() error {
	var plans [numArenas]layout
	for k, a := range p.arenas {
		if a == nil || len(a.pending) == 0 {
			continue
		}
		l, err := a.plan()
		if err != nil {
			p.log.Warn("cudapool: arena exhausted", zap.Error(err))
			return err
		}
		plans[k] = l
	}
	if a := p.arenas[Device]; a != nil && a.growable != nil && len(a.pending) > 0 {
		// Map before placing: a failed growth leaves the arena as it was.
		if err := a.growable.Ensure(plans[Device].end); err != nil {
			return fmt.Errorf("pool: grow the device arena to %s: %w", humanize.IBytes(plans[Device].end), err)
		}
	}
	for k, a := range p.arenas {
		if a != nil && len(a.pending) > 0 {
			a.apply(plans[k])
		}
	}
	return nil
}

// Commit satisfies the queue and locks the layout: WantDevice and WantHost
// fail with ErrCommitted until ReleaseAll.
func (p *Pool) Commit() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if err := p.satisfyLocked(); err != nil {
		return err
	}
	p.committed = true
	fields := []zap.Field{zap.Int("device", p.device)}
	for _, a := range p.arenas {
		if a != nil {
			fields = append(fields, zap.String(a.kind.String()+"_used",
				fmt.Sprintf("%s of %s", humanize.IBytes(a.used), humanize.IBytes(a.capacity))))
		}
	}
	p.log.Info("cudapool: committed", fields...)
	return nil
}

// ReleaseAll drops every request, placed or queued, resets the arenas to
// offset 0 and unlocks a committed pool. It first waits for the device, since
// kernels still in flight may use the buffers; if that wait fails, nothing is
// reset. Every handle from before is stale afterwards (ErrReleased). With
// WithTrimOnRelease it then gives the growable arena's memory back; if that
// fails, the pool is released all the same and the error says so.
func (p *Pool) ReleaseAll() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if err := p.rt.DeviceSynchronize(p.device); err != nil {
		return fmt.Errorf("pool: wait for device %d before release: %w", p.device, err)
	}
	placed := 0
	for _, a := range p.arenas {
		if a != nil {
			placed += len(a.placed)
			a.reset()
		}
	}
	p.gen++
	p.committed = false
	p.log.Info("cudapool: released", zap.Int("device", p.device), zap.Int("buffers", placed))
	// Trimmed only once every handle is stale: a trim that fails part way
	// leaves no buffer over memory it unmapped, and the next Satisfy maps
	// again what it needs.
	if a := p.arenas[Device]; p.trimOnRelease && a != nil && a.growable != nil {
		if err := a.growable.Trim(0); err != nil {
			return fmt.Errorf("pool: released, but trimming the growable device arena failed: %w", err)
		}
	}
	return nil
}
