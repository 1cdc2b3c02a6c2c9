package cudart

import (
	"fmt"

	"github.com/dustin/go-humanize"
)

// SetDevice is cudaSetDevice for the calling OS thread, which the goroutine
// may leave at any time: it is for code that calls CUDA itself after locking
// its thread (runtime.LockOSThread). Every other method selects its device.
func (l *Lib) SetDevice(device int) error {
	if l.closed.Load() {
		return closedError("cudaSetDevice")
	}
	if r := l.be.setDevice(device); r.code != 0 {
		return l.fail(r, "cudaSetDevice(%d)", device)
	}
	return nil
}

// DeviceGetLimit is cudaDeviceGetLimit on device.
func (l *Lib) DeviceGetLimit(device int, lim Limit) (uint64, error) {
	if l.closed.Load() {
		return 0, closedError("cudaDeviceGetLimit")
	}
	r := l.be.deviceGetLimit(device, lim)
	if r.code != 0 {
		return 0, l.fail(r, "cudaDeviceGetLimit(%s) on device %d", limitName(lim), device)
	}
	return r.a, nil
}

// DeviceSetLimit is cudaDeviceSetLimit on device.
func (l *Lib) DeviceSetLimit(device int, lim Limit, value uint64) error {
	if l.closed.Load() {
		return closedError("cudaDeviceSetLimit")
	}
	if r := l.be.deviceSetLimit(device, lim, value); r.code != 0 {
		return l.fail(r, "cudaDeviceSetLimit(%s, %s) on device %d", limitName(lim), humanize.Bytes(value), device)
	}
	return nil
}

// RuntimeVersion is cudaRuntimeGetVersion: 1000*major + 10*minor, e.g. 13000.
func (l *Lib) RuntimeVersion() (int, error) {
	if l.closed.Load() {
		return 0, closedError("cudaRuntimeGetVersion")
	}
	r := l.be.runtimeVersion()
	if r.code != 0 {
		return 0, l.fail(r, "cudaRuntimeGetVersion()")
	}
	return int(r.a), nil
}

// DriverVersion is cudaDriverGetVersion: the newest CUDA version the driver
// supports, 0 when no driver is installed.
func (l *Lib) DriverVersion() (int, error) {
	if l.closed.Load() {
		return 0, closedError("cudaDriverGetVersion")
	}
	r := l.be.driverVersion()
	if r.code != 0 {
		return 0, l.fail(r, "cudaDriverGetVersion()")
	}
	return int(r.a), nil
}

// DeviceName is cuDeviceGetName (after cuInit): the device's marketing name.
// It needs the driver library.
func (l *Lib) DeviceName(device int) (string, error) {
	if err := l.driverReady("cuDeviceGetName"); err != nil {
		return "", err
	}
	name, r := l.be.deviceName(device)
	if r.code != 0 {
		return "", l.fail(r, "cuDeviceGetName(device %d)", device)
	}
	return name, nil
}

func limitName(lim Limit) string {
	switch lim {
	case LimitStackSize:
		return "cudaLimitStackSize"
	case LimitPrintfFifoSize:
		return "cudaLimitPrintfFifoSize"
	case LimitMallocHeapSize:
		return "cudaLimitMallocHeapSize"
	}
	return fmt.Sprintf("cudaLimit(%d)", int(lim))
}
