package pool

import (
	"fmt"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
)

// WithManagedBytes takes a third arena of n bytes of unified memory
// (cudaMallocManaged, attached globally), for buffers that both the host and
// the device touch; WantManaged places buffers in it. New refuses an arena
// larger than the device's free memory: oversubscribed managed memory pages
// back and forth, and on some systems can hang the GPU. The runtime must
// implement cudart.Managed.
func WithManagedBytes(n uint64) Option { return func(c *config) { c.managedBytes = n } }

// WantManaged queues a request for size bytes in the managed arena. Its Ptr
// is valid on the device and, once prefetched there, fast on the host.
func (p *Pool) WantManaged(size uint64, opts ...WantOption) (*Buffer, error) {
	return p.want(Managed, size, opts)
}

func (p *Pool) newManagedArena(n uint64) (*arena, error) {
	m, ok := p.rt.(cudart.Managed)
	if !ok {
		return nil, fmt.Errorf("%w: WithManagedBytes needs a runtime with managed memory (cudart.Managed); %T has none", ErrInvalidOption, p.rt)
	}
	free, total, err := p.rt.MemGetInfo(p.device)
	if err != nil {
		return nil, fmt.Errorf("pool: read free memory of device %d: %w", p.device, err)
	}
	if n > free {
		return nil, fmt.Errorf("%w: managed arena of %s is more than device %d has free (%s of %s); ask for at most that",
			ErrInvalidOption, humanize.IBytes(n), p.device, humanize.IBytes(free), humanize.IBytes(total))
	}
	ptr, err := m.MallocManaged(p.device, n, cudart.MemAttachGlobal)
	if err != nil {
		return nil, fmt.Errorf("pool: reserve %s managed arena on device %d: %w", humanize.IBytes(n), p.device, err)
	}
	return &arena{
		kind:     Managed,
		capacity: n,
		devBase:  ptr,
		release:  func() error { return p.rt.Free(p.device, ptr) },
	}, nil
}

// Prefetch migrates a managed buffer to device dst, or to host memory with
// cudart.CPUDevice, on the default stream: the copy is asynchronous, and a
// later synchronisation (or the next use on the same stream) waits for it.
func (b *Buffer) Prefetch(dst int) error {
	b.p.mu.Lock()
	defer b.p.mu.Unlock()
	if err := b.usable(); err != nil {
		return err
	}
	if b.arena != Managed {
		return fmt.Errorf("%w: %s is not in the managed arena; only managed memory migrates", ErrWrongArena, b.label())
	}
	m := b.p.rt.(cudart.Managed) // newManagedArena checked it
	ptr := b.p.arenas[Managed].devBase.Add(b.offset)
	if err := m.MemPrefetchAsync(b.p.device, ptr, b.size, dst, 0); err != nil {
		return fmt.Errorf("pool: prefetch %s to device %d: %w", b.label(), dst, err)
	}
	return nil
}
