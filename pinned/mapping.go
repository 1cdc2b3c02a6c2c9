package pinned

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/cudapool/cudapool/cudart"
)

// enableMapHost sets cudaDeviceMapHost on the device when it is not set yet:
// old drivers give mapped memory a device address only with it. Drivers with
// unified addressing map pinned memory whatever the flag says and may refuse
// to change flags on a device in use, so a failure here is only logged; the
// device pointer lookup that follows is what decides.
func enableMapHost(ha cudart.HostAllocator, device int, log *zap.Logger) {
	flags, err := ha.GetDeviceFlags(device)
	if err == nil && flags&cudart.DeviceMapHost != 0 {
		return
	}
	if err == nil {
		err = ha.SetDeviceFlags(device, flags|cudart.DeviceMapHost)
	}
	if err != nil {
		log.Debug("pinned: cannot set cudaDeviceMapHost; relying on unified addressing", zap.Int("device", device), zap.Error(err))
	}
}

// mappedAt is dev, the device address of memory pinned with flags, through
// which a kernel reaches it: DevicePtr of a Region or a Registration still
// pinned. Memory pinned without Mapped has none: an error wrapping
// ErrNotMapped says so.
func mappedAt(flags Flags, dev cudart.DevicePtr) (cudart.DevicePtr, error) {
	if flags&Mapped == 0 {
		return 0, fmt.Errorf("%w: flags %s", ErrNotMapped, flags)
	}
	return dev, nil
}
