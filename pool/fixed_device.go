package pool

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// fixedDevice is the C++ pool's device arena: one cudaMalloc of its whole
// size at New. The managed arena is one too, but for its allocation.
type fixedDevice struct {
	rt     cudart.Runtime
	dev    int
	base   cudart.DevicePtr
	size   uint64
	kind   string // the arena's name in an error: "device" or "managed"
	closed bool
}

func reserveFixedDevice(rt cudart.Runtime, dev int, n uint64) (*fixedDevice, error) {
	ptr, err := rt.Malloc(dev, n)
	if err != nil {
		return nil, fmt.Errorf("pool: reserve %s device arena on device %d: %w", bytesize.Format(n), dev, err)
	}
	return &fixedDevice{rt: rt, dev: dev, base: ptr, size: n, kind: "device"}, nil
}

func (a *fixedDevice) capacity() uint64              { return a.size }
func (a *fixedDevice) back(uint64) error             { return nil }
func (a *fixedDevice) device() cudart.DevicePtr      { return a.base }
func (a *fixedDevice) host() []byte                  { return nil }
func (a *fixedDevice) release() error                { return nil }
func (a *fixedDevice) stats(s ArenaStats) ArenaStats { return s }

func (a *fixedDevice) annotatable() bool { return true }

func (a *fixedDevice) forget() error {
	a.closed = true
	return nil
}

func (a *fixedDevice) close() error {
	if a.closed {
		return nil
	}
	if err := a.rt.Free(a.dev, a.base); err != nil {
		return fmt.Errorf("pool: free %s %s arena: %w", bytesize.Format(a.size), a.kind, err)
	}
	a.closed = true
	return nil
}
