package pool

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// WithManagedBytes takes a third arena of n bytes of unified memory
// (cudaMallocManaged, attached globally), for buffers that both the host and
// the device touch; WantManaged places buffers in it. New refuses an arena
// larger than the device's free memory: oversubscribed managed memory pages
// back and forth, and on some systems can hang the GPU. The runtime must
// implement cudart.Managed.
func WithManagedBytes(n uint64) Option { return set(func(c *config) { c.managedBytes = n }) }

// WantManaged queues a request for size bytes in the managed arena. Its Ptr
// is valid on the device and, once prefetched there, fast on the host.
func (p *Pool) WantManaged(size uint64, opts ...WantOption) (*Buffer, error) {
	return p.want(Managed, size, opts)
}

// managedArena is unified memory from one cudaMallocManaged, freed as the
// fixed device arena is.
type managedArena struct {
	fixedDevice
	m cudart.Managed
}

func reserveManaged(rt cudart.Runtime, dev int, n uint64) (*managedArena, error) {
	m, ok := rt.(cudart.Managed)
	if !ok {
		return nil, fmt.Errorf("%w: WithManagedBytes needs a runtime with managed memory (cudart.Managed); %T has none", ErrInvalidOption, rt)
	}
	free, total, err := rt.MemGetInfo(dev)
	if err != nil {
		return nil, fmt.Errorf("pool: read free memory of device %d: %w", dev, err)
	}
	if n > free {
		return nil, fmt.Errorf("%w: managed arena of %s is more than device %d has free (%s of %s); ask for at most that",
			ErrInvalidOption, bytesize.Format(n), dev, bytesize.Format(free), bytesize.Format(total))
	}
	ptr, err := m.MallocManaged(dev, n, cudart.MemAttachGlobal)
	if err != nil {
		return nil, fmt.Errorf("pool: reserve %s managed arena on device %d: %w", bytesize.Format(n), dev, err)
	}
	return &managedArena{fixedDevice{rt: rt, dev: dev, base: ptr, size: n, kind: "managed"}, m}, nil
}

// Prefetch migrates a managed buffer to device dst, or to host memory with
// cudart.CPUDevice, on the default stream: the copy is asynchronous, and a
// later synchronisation (or the next use on the same stream) waits for it.
func (b *Buffer) Prefetch(dst int) error {
	if err := b.lock(); err != nil {
		return err
	}
	defer b.p.mu.Unlock()
	a, ok := b.p.arenas[b.arena].mem.(*managedArena)
	if !ok {
		return fmt.Errorf("%w: %s is not in the managed arena; only managed memory migrates", ErrWrongArena, b.label())
	}
	if err := a.m.MemPrefetchAsync(b.p.dev, a.base.Add(b.offset), b.size, dst, 0); err != nil {
		return fmt.Errorf("pool: prefetch %s to device %d: %w", b.label(), dst, err)
	}
	return nil
}
