package pool

import (
	"fmt"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
)

// WithMallocHeap sets the size of the heap behind device-side malloc
// (cudaLimitMallocHeapSize; CUDA's default is 8 MiB) when New runs. CUDA
// fixes the heap once a kernel that calls malloc is loaded, so create the
// pool before launching such kernels; Pool.MallocHeap reports what CUDA
// granted. The runtime must implement cudart.Device.
func WithMallocHeap(bytes uint64) Option { return func(c *config) { c.heapBytes = bytes } }

// MallocHeap is the device malloc heap size CUDA granted for WithMallocHeap,
// or 0 when the option was not given.
func (p *Pool) MallocHeap() uint64 { return p.heapBytes }

func (p *Pool) setMallocHeap(n uint64) (uint64, error) {
	d, ok := p.rt.(cudart.Device)
	if !ok {
		return 0, fmt.Errorf("%w: WithMallocHeap needs a runtime with device limits (cudart.Device); %T has none", ErrInvalidOption, p.rt)
	}
	if err := d.DeviceSetLimit(p.device, cudart.LimitMallocHeapSize, n); err != nil {
		return 0, fmt.Errorf("pool: set the device malloc heap to %s on device %d (it cannot change once a kernel using malloc is loaded): %w",
			humanize.IBytes(n), p.device, err)
	}
	granted, err := d.DeviceGetLimit(p.device, cudart.LimitMallocHeapSize)
	if err != nil {
		return 0, fmt.Errorf("pool: read the device malloc heap size on device %d: %w", p.device, err)
	}
	if granted < n {
		return 0, fmt.Errorf("%w: device malloc heap of %s asked on device %d, CUDA granted %s",
			ErrInvalidOption, humanize.IBytes(n), p.device, humanize.IBytes(granted))
	}
	return granted, nil
}
