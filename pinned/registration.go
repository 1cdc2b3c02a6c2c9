package pinned

import (
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/devreset"
)

// Registration is memory the caller already had, pinned by Register. Its
// methods are safe for concurrent use.
type Registration struct {
	hr     cudart.HostRegisterer
	device int
	b      []byte
	flags  Flags
	dev    cudart.DevicePtr // the device address, when Mapped
	reset  devreset.Watch   // sees a reset of device, which unpins b

	mu     sync.Mutex // guards chunks
	chunks [][]byte   // the chunks of b still registered; nil once unregistered
}

// Register pins b, memory the caller already has (a Go slice, an mmap), so
// that copies from and to it run at pinned speed; with Mapped, a kernel can
// also read it in place through DevicePtr. Flags may be Portable and Mapped:
// WriteCombined exists only for memory cudaHostAlloc allocates, and is
// refused with ErrUnsupported.
//
// b need not be page aligned: CUDA 4.0 required it, and CUDA 4.1 and later,
// 12 and 13 included, pin the pages that cover b. Two ranges that share a
// page but not a byte can both be registered. Overlapping ranges cannot: a
// range that overlaps one this package has pinned is refused with
// ErrAlreadyRegistered before CUDA is called, and CUDA's own
// cudaErrorHostMemoryAlreadyRegistered, for memory pinned by other code,
// matches ErrAlreadyRegistered too.
//
// Until Unregister, the package keeps a reference to b, so the garbage
// collector cannot free a Go slice that CUDA still has pinned. See the
// package's Caveats.
func Register(rt cudart.Runtime, device int, b []byte, flags Flags) (*Registration, error) {
	if rt == nil {
		return nil, fmt.Errorf("%w: nil runtime; pass cudart.Open's Library or a cudarttest fake", ErrInvalidOption)
	}
	if err := flags.validate(); err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: cannot register an empty slice", ErrInvalidSize)
	}
	hr, ok := rt.(cudart.HostRegisterer)
	if !ok {
		return nil, fmt.Errorf("%w: the runtime (%T) cannot register host memory (no cudart.HostRegisterer)", ErrUnsupported, rt)
	}
	if flags&WriteCombined != 0 {
		return nil, fmt.Errorf("%w: WriteCombined has no cudaHostRegister equivalent; allocate with Alloc and WithMethod(MethodHostAlloc) instead", ErrUnsupported)
	}
	var ha cudart.HostAllocator
	if flags&Mapped != 0 {
		if ha, ok = rt.(cudart.HostAllocator); !ok {
			return nil, fmt.Errorf("%w: Mapped needs cudaHostGetDevicePointer, which the runtime (%T) lacks (no cudart.HostAllocator)", ErrUnsupported, rt)
		}
	}
	reset := devreset.Start(rt, device)
	if err := pinnedRanges.claim(b, "registered by Register", reset); err != nil {
		return nil, err
	}
	if ha != nil {
		enableMapHost(ha, device, zap.NewNop())
	}
	g := &Registration{hr: hr, device: device, b: b, flags: flags, reset: reset}
	var err error
	if g.chunks, err = registerChunks(hr, device, b, flags); err == nil && ha != nil {
		g.dev, err = devicePointer(ha, device, g.chunks)
	}
	if err != nil {
		if uerr := g.unregister(); uerr != nil {
			return nil, fmt.Errorf("%w; undoing it: %w", err, uerr)
		}
		return nil, err
	}
	return g, nil
}

// DevicePtr is the device address of the registered memory, through which
// a kernel reads and writes the same bytes. Only a registration with Mapped
// has one: others get ErrNotMapped, and one unregistered ErrNotRegistered.
func (g *Registration) DevicePtr() (cudart.DevicePtr, error) {
	if g == nil {
		return 0, errNilRegistration
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.chunks == nil {
		return 0, ErrNotRegistered
	}
	return mappedAt(g.flags, g.dev)
}

// Unregister unpins the memory; call it before the memory goes away. A
// second call returns ErrNotRegistered. When CUDA refuses, the error says so
// and the registration keeps what is still pinned, so that calling
// Unregister again retries only that. After a reset of the device
// (cudaDeviceReset through cudart), which unpinned the memory, it calls no
// CUDA and forgets the registration.
func (g *Registration) Unregister() error {
	if g == nil {
		return errNilRegistration
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.chunks == nil {
		return fmt.Errorf("%w: %s at 0x%x was unregistered already", ErrNotRegistered, bytesize.Format(uint64(len(g.b))), addr(g.b))
	}
	return g.unregister()
}

// unregister is Unregister with g.mu held, or during Register before g is
// shared.
func (g *Registration) unregister() error {
	if g.reset.Reset() {
		g.chunks = nil
		pinnedRanges.forget(g.b, g.reset)
		return nil
	}
	left, err := unregisterChunks(g.hr, g.device, g.chunks)
	if len(left) > 0 {
		g.chunks = left
		return err
	}
	g.chunks = nil
	pinnedRanges.release(g.b)
	return err
}
