// Package devreset tells code that holds CUDA memory whether the device was
// reset (cudaDeviceReset) since it took it: CUDA then freed the memory of
// the device's context, which the code must forget rather than free again;
// virtual memory outlives the reset and is still the code's to free, unless
// the reset lost the device.
package devreset

// Counter is what counts a device's resets: cudart.Device has it.
type Counter interface {
	DeviceResets(device int) uint64
}

// Watch remembers a device's reset count. The zero Watch, and one on a
// runtime that counts no resets, never sees a reset. Watches compare equal
// when they watch the same runtime and device from the same count.
type Watch struct {
	c      Counter
	device int
	n      uint64
}

// Start watches device of rt from now.
func Start(rt any, device int) Watch {
	c, ok := rt.(Counter)
	if !ok {
		return Watch{}
	}
	return Watch{c: c, device: device, n: c.DeviceResets(device)}
}

// Reset reports whether the device was reset since Start.
func (w Watch) Reset() bool {
	return w.c != nil && w.c.DeviceResets(w.device) != w.n
}
