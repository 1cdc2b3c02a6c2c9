package pool

import (
	"fmt"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/vmem"
)

// WithGrowableDevice makes the device arena growable on CUDA virtual memory:
// New reserves maxBytes of address space, which costs no memory, and Satisfy
// maps physical memory, in whole allocation granules, as placed buffers need
// it. Buffers never move and their addresses stay valid as the arena grows.
// It replaces the fixed device arena (WithDeviceBytes is then ignored; 0
// keeps the fixed arena), and needs a runtime that implements
// cudart.VirtualMemory.
func WithGrowableDevice(maxBytes uint64) Option {
	return func(c *config) { c.growableMax = maxBytes }
}

// WithTrimOnRelease makes ReleaseAll give the growable arena's physical
// memory back to the device. By default ReleaseAll keeps it mapped, so the
// next plan of the same size maps nothing.
func WithTrimOnRelease() Option { return func(c *config) { c.trimOnRelease = true } }

// WithPeerAccess grants the listed devices read-write access to the growable
// device arena, in one cuMemSetAccess call per growth, so kernels and copies
// on those GPUs can use its buffers directly.
func WithPeerAccess(devices ...int) Option {
	return func(c *config) { c.peers = append([]int(nil), devices...) }
}

func (p *Pool) newGrowableArena(maxBytes uint64, peers []int) (*arena, error) {
	vm, ok := p.rt.(cudart.VirtualMemory)
	if !ok {
		return nil, fmt.Errorf("%w: WithGrowableDevice needs a runtime with virtual memory (cudart.VirtualMemory); %T has none", ErrInvalidOption, p.rt)
	}
	va, err := vmem.NewArena(vm, p.device, maxBytes, vmem.WithPeers(peers...))
	if err != nil {
		return nil, fmt.Errorf("pool: reserve %s growable device arena on device %d: %w", humanize.IBytes(maxBytes), p.device, err)
	}
	return &arena{
		kind:     Device,
		capacity: maxBytes,
		devBase:  va.Base(),
		release:  va.Close,
		growable: va,
	}, nil
}
