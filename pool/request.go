package pool

import (
	"fmt"

	"github.com/dustin/go-humanize"
	"go.uber.org/zap"

	"github.com/cudapool/cudapool/align"
)

// WantDevice queues a request for size bytes in the device arena. The buffer
// gets its address at the next Satisfy or Commit.
func (p *Pool) WantDevice(size uint64, opts ...WantOption) (*Buffer, error) {
	return p.want(Device, size, opts)
}

// WantHost queues a request for size bytes in the pinned host arena.
func (p *Pool) WantHost(size uint64, opts ...WantOption) (*Buffer, error) {
	return p.want(Host, size, opts)
}

func (p *Pool) want(kind Arena, size uint64, opts []WantOption) (*Buffer, error) {
	b := &Buffer{p: p, arena: kind, size: size}
	for _, o := range opts {
		o(b)
	}
	if size == 0 {
		return nil, fmt.Errorf("%w: %s: size is zero", ErrInvalidRequest, b.label())
	}
	if _, err := align.Up(size, align.CUDA); err != nil {
		return nil, fmt.Errorf("%w: %s: size %d overflows once aligned to %d bytes", ErrInvalidRequest, b.label(), size, align.CUDA)
	}
	if err := b.checkLife(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch a := p.arenas[kind]; {
	case p.closed:
		return nil, ErrClosed
	case p.committed:
		return nil, fmt.Errorf("%w: %s", ErrCommitted, b.label())
	case a == nil:
		return nil, fmt.Errorf("%w: the %s arena was not reserved (its size option was 0): %s", ErrNoArena, kind, b.label())
	case alignedSize(size) > a.capacity:
		return nil, &ExhaustedError{Arena: kind, Need: alignedSize(size), Have: a.capacity, LargestName: b.name, LargestBytes: size}
	default:
		b.gen = p.gen
		a.pending = append(a.pending, b)
	}
	if ce := p.log.Check(zap.DebugLevel, "cudapool: request queued"); ce != nil {
		ce.Write(zap.Stringer("arena", kind), zap.String("name", b.name), zap.String("size", humanize.IBytes(size)))
	}
	return b, nil
}
