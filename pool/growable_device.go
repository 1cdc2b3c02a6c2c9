package pool

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
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
	return set(func(c *config) { c.growableMax = maxBytes })
}

// WithTrimOnRelease makes ReleaseAll give the growable arena's physical
// memory back to the device. By default ReleaseAll keeps it mapped, so the
// next plan of the same size maps nothing.
func WithTrimOnRelease() Option { return set(func(c *config) { c.trimOnRelease = true }) }

// WithPeerAccess grants the listed devices read-write access to the growable
// device arena, in one cuMemSetAccess call per growth, so kernels and copies
// on those GPUs can use its buffers directly. Close waits for these devices
// too before it unmaps the arena.
func WithPeerAccess(devices ...int) Option {
	peers := append([]int(nil), devices...)
	return set(func(c *config) { c.peers = peers })
}

// growableDevice is a device arena on CUDA virtual memory: address space
// reserved at New, physical memory mapped by back as Satisfy needs it.
type growableDevice struct {
	va   *vmem.Arena
	trim bool // give the memory back at release
}

func reserveGrowableDevice(rt cudart.Runtime, dev int, maxBytes uint64, peers []int, trim bool) (*growableDevice, error) {
	vm, ok := rt.(cudart.VirtualMemory)
	if !ok {
		return nil, fmt.Errorf("%w: WithGrowableDevice needs a runtime with virtual memory (cudart.VirtualMemory); %T has none", ErrInvalidOption, rt)
	}
	va, err := vmem.NewArena(vm, dev, maxBytes, vmem.WithPeers(peers...))
	if err != nil {
		return nil, fmt.Errorf("pool: reserve %s growable device arena on device %d: %w", bytesize.Format(maxBytes), dev, err)
	}
	return &growableDevice{va: va, trim: trim}, nil
}

func (a *growableDevice) capacity() uint64         { return a.va.Max() }
func (a *growableDevice) device() cudart.DevicePtr { return a.va.Base() }
func (a *growableDevice) host() []byte             { return nil }

// annotatable is false: compute-sanitizer (2025.3) refuses a heap over
// virtual memory mappings, whether over the reservation or over what is
// mapped, so a growable arena's buffers are not annotated; guards still
// work.
func (a *growableDevice) annotatable() bool { return false }

func (a *growableDevice) stats(s ArenaStats) ArenaStats {
	s.Mapped = a.va.Mapped()
	return s
}

func (a *growableDevice) back(end uint64) error {
	if err := a.va.Ensure(end); err != nil {
		return fmt.Errorf("pool: grow the device arena to %s: %w", bytesize.Format(end), err)
	}
	return nil
}

// release trims only once every handle is stale: a trim that fails part way
// leaves no buffer over memory it unmapped, and the next Satisfy maps again
// what it needs.
func (a *growableDevice) release() error {
	if !a.trim {
		return nil
	}
	if err := a.va.Trim(0); err != nil {
		return fmt.Errorf("pool: trim the growable device arena: %w", err)
	}
	return nil
}

// forget is close: a reset leaves virtual memory alone, so package vmem
// still unmaps, releases and frees it, and forgets it on a device the reset
// lost.
func (a *growableDevice) forget() error { return a.close() }

func (a *growableDevice) close() error {
	if err := a.va.Close(); err != nil {
		return fmt.Errorf("pool: free %s growable device arena: %w", bytesize.Format(a.va.Max()), err)
	}
	return nil
}
