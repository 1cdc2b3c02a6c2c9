package cudart

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cudapool/cudapool/internal/bytesize"
)

// SetDevice is cudaSetDevice for the calling OS thread, which the goroutine
// may leave at any time: it is for code that calls CUDA itself after locking
// its thread (runtime.LockOSThread). Every other method selects its device.
func (l *Lib) SetDevice(device int) error {
	if l.unusable() {
		return closedError(CallSetDevice)
	}
	if r := l.call(CallSetDevice, device, cint(device)); r.code != 0 {
		return l.fail(CallSetDevice, r, "(%d)", device)
	}
	return nil
}

// DeviceGetLimit is cudaDeviceGetLimit on device.
func (l *Lib) DeviceGetLimit(device int, lim Limit) (uint64, error) {
	if l.unusable() {
		return 0, closedError(CallDeviceGetLimit)
	}
	r := l.call(CallDeviceGetLimit, device, cint(lim))
	if r.code != 0 {
		return 0, l.fail(CallDeviceGetLimit, r, "(%s) on device %d", limitName(lim), device)
	}
	return r.a, nil
}

// DeviceSetLimit is cudaDeviceSetLimit on device.
func (l *Lib) DeviceSetLimit(device int, lim Limit, value uint64) error {
	if l.unusable() {
		return closedError(CallDeviceSetLimit)
	}
	if r := l.call(CallDeviceSetLimit, device, cint(lim), uintptr(value)); r.code != 0 {
		return l.fail(CallDeviceSetLimit, r, "(%s, %s) on device %d", limitName(lim), bytesize.Format(value), device)
	}
	return nil
}

// RuntimeVersion is cudaRuntimeGetVersion: 1000*major + 10*minor, e.g. 13000.
func (l *Lib) RuntimeVersion() (int, error) {
	if l.unusable() {
		return 0, closedError(CallRuntimeGetVersion)
	}
	r := l.call(CallRuntimeGetVersion, -1)
	if r.code != 0 {
		return 0, l.fail(CallRuntimeGetVersion, r, "()")
	}
	return int(int32(r.a)), nil
}

// DriverVersion is cudaDriverGetVersion: the newest CUDA version the driver
// supports, 0 when no driver is installed.
func (l *Lib) DriverVersion() (int, error) {
	if l.unusable() {
		return 0, closedError(CallDriverGetVersion)
	}
	r := l.call(CallDriverGetVersion, -1)
	if r.code != 0 {
		return 0, l.fail(CallDriverGetVersion, r, "()")
	}
	return int(int32(r.a)), nil
}

// DeviceName is cuDeviceGetName, after cuInit and cuDeviceGet: the device's
// marketing name. It needs the driver library.
func (l *Lib) DeviceName(device int) (string, error) {
	if err := l.driverReady(CallCuDeviceGetName); err != nil {
		return "", err
	}
	if r := l.call(CallCuInit, device, 0); r.code != 0 {
		return "", l.fail(CallCuInit, r, "(0) for the name of device %d", device)
	}
	r := l.call(CallCuDeviceGet, device, cint(device))
	if r.code != 0 {
		return "", l.fail(CallCuDeviceGet, r, "(%d)", device)
	}
	buf := make([]byte, deviceNameBufferBytes)
	if r := l.callMem(CallCuDeviceGetName, device, [2]Mem{HostMem(buf)}, uintptr(len(buf)), cint(int(int32(r.a)))); r.code != 0 {
		return "", l.fail(CallCuDeviceGetName, r, "(device %d)", device)
	}
	name, _, _ := bytes.Cut(buf, []byte{0})
	return string(name), nil
}

// DeviceReset is cudaDeviceReset on device: every allocation, stream and
// setting of the device in this process is destroyed, and a sticky error
// cleared. Memory from before is invalid after.
func (l *Lib) DeviceReset(device int) error {
	if l.unusable() {
		return closedError(CallDeviceReset)
	}
	if r := l.call(CallDeviceReset, device); r.code != 0 {
		return l.fail(CallDeviceReset, r, "() on device %d", device)
	}
	resetCounter(device).Add(1)
	return nil
}

// deviceResets counts the resets of each device ordinal made through any
// *Lib: they all share the process's CUDA state.
var deviceResets sync.Map // int -> *atomic.Uint64

func resetCounter(device int) *atomic.Uint64 {
	if c, ok := deviceResets.Load(device); ok {
		return c.(*atomic.Uint64)
	}
	c, _ := deviceResets.LoadOrStore(device, new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

// DeviceResets is how many times DeviceReset succeeded on device through
// any *Lib of the process. It makes no CUDA call.
func (l *Lib) DeviceResets(device int) uint64 {
	if c, ok := deviceResets.Load(device); ok {
		return c.(*atomic.Uint64).Load()
	}
	return 0
}

// DeviceCanAccessPeer is cudaDeviceCanAccessPeer: whether device can access
// memory on peer.
func (l *Lib) DeviceCanAccessPeer(device, peer int) (bool, error) {
	if l.unusable() {
		return false, closedError(CallDeviceCanAccessPeer)
	}
	r := l.call(CallDeviceCanAccessPeer, -1, cint(device), cint(peer))
	if r.code != 0 {
		return false, l.fail(CallDeviceCanAccessPeer, r, "(%d, %d)", device, peer)
	}
	return int32(r.a) != 0, nil
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
