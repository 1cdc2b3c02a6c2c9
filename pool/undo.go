package pool

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
)

// undoList is what New has changed so far, as functions that put each change
// back, run in reverse order when New fails.
type undoList []func() error

func (u *undoList) push(f func() error) { *u = append(*u, f) }

func (u undoList) run() error {
	var errs []error
	for i := len(u) - 1; i >= 0; i-- {
		errs = append(errs, u[i]())
	}
	return errors.Join(errs...)
}

// keepDeviceFlags returns what restores the device's flags as they are now:
// pinning a mapped host arena may set cudaDeviceMapHost. When the flags
// cannot be read there is nothing to restore, and the pinning that follows
// reports the runtime's trouble itself.
func keepDeviceFlags(rt cudart.Runtime, dev int) func() error {
	ha, ok := rt.(cudart.HostAllocator)
	if !ok {
		return func() error { return nil }
	}
	before, err := ha.GetDeviceFlags(dev)
	if err != nil {
		return func() error { return nil }
	}
	return func() error {
		now, err := ha.GetDeviceFlags(dev)
		if err != nil || now == before {
			return nil
		}
		if err := ha.SetDeviceFlags(dev, before); err != nil {
			return fmt.Errorf("pool: restore the flags of device %d to %#x: %w", dev, uint32(before), err)
		}
		return nil
	}
}
