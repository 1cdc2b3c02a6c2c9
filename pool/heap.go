package pool

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// WithMallocHeap sets the size of the heap behind device-side malloc
// (cudaLimitMallocHeapSize; CUDA's default is 8 MiB) when New runs. CUDA
// fixes the heap once a kernel that calls malloc is loaded, so create the
// pool before launching such kernels; Pool.MallocHeap reports what CUDA
// granted. The size stays set after Close, as CUDA limits are per device,
// not per pool; a New that fails puts the old size back. The runtime must
// implement cudart.Device.
func WithMallocHeap(bytes uint64) Option { return set(func(c *config) { c.heapBytes = bytes }) }

// MallocHeap is the device malloc heap size CUDA granted for WithMallocHeap,
// or 0 when the option was not given.
func (p *Pool) MallocHeap() uint64 {
	if p == nil {
		return 0
	}
	return p.heapBytes
}

// setMallocHeap sets the heap to n bytes and pushes onto undo what puts the
// old size back.
func setMallocHeap(rt cudart.Runtime, dev int, n uint64, undo *undoList) (uint64, error) {
	d, ok := rt.(cudart.Device)
	if !ok {
		return 0, fmt.Errorf("%w: WithMallocHeap needs a runtime with device limits (cudart.Device); %T has none", ErrInvalidOption, rt)
	}
	old, err := d.DeviceGetLimit(dev, cudart.LimitMallocHeapSize)
	if err != nil {
		return 0, fmt.Errorf("pool: read the device malloc heap size on device %d: %w", dev, err)
	}
	if err := d.DeviceSetLimit(dev, cudart.LimitMallocHeapSize, n); err != nil {
		return 0, fmt.Errorf("pool: set the device malloc heap to %s on device %d (it cannot change once a kernel using malloc is loaded): %w",
			bytesize.Format(n), dev, err)
	}
	undo.push(func() error {
		if err := d.DeviceSetLimit(dev, cudart.LimitMallocHeapSize, old); err != nil {
			return fmt.Errorf("pool: restore the device malloc heap of device %d to %s: %w", dev, bytesize.Format(old), err)
		}
		return nil
	})
	granted, err := d.DeviceGetLimit(dev, cudart.LimitMallocHeapSize)
	if err != nil {
		return 0, fmt.Errorf("pool: read the device malloc heap size on device %d: %w", dev, err)
	}
	if granted < n {
		return 0, fmt.Errorf("%w: device malloc heap of %s asked on device %d, CUDA granted %s",
			ErrInvalidOption, bytesize.Format(n), dev, bytesize.Format(granted))
	}
	return granted, nil
}
