package cudart

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/enum"
)

// SetDevice is cudaSetDevice for the calling OS thread, which the goroutine
// may leave at any time: it is for code that calls CUDA itself after locking
// its thread (runtime.LockOSThread). Every other method selects its device.
func (l *library) SetDevice(device int) error {
	if r := l.call(calls.SetDevice, device, cint(device)); r.code != 0 {
		return l.fail(calls.SetDevice, r, "(%d)", device)
	}
	return nil
}

// DeviceGetLimit is cudaDeviceGetLimit on device.
func (l *library) DeviceGetLimit(device int, lim Limit) (uint64, error) {
	r := l.call(calls.DeviceGetLimit, device, cint(lim))
	if r.code != 0 {
		return 0, l.fail(calls.DeviceGetLimit, r, "(%s) on device %d", limits.Name(lim), device)
	}
	return r.a, nil
}

// DeviceSetLimit is cudaDeviceSetLimit on device.
func (l *library) DeviceSetLimit(device int, lim Limit, value uint64) error {
	if r := l.call(calls.DeviceSetLimit, device, cint(lim), uintptr(value)); r.code != 0 {
		return l.fail(calls.DeviceSetLimit, r, "(%s, %s) on device %d", limits.Name(lim), bytesize.Format(value), device)
	}
	return nil
}

// RuntimeVersion is cudaRuntimeGetVersion: 1000*major + 10*minor, e.g. 13000.
func (l *library) RuntimeVersion() (int, error) {
	r := l.call(calls.RuntimeGetVersion, -1)
	if r.code != 0 {
		return 0, l.fail(calls.RuntimeGetVersion, r, "()")
	}
	return int(int32(r.a)), nil
}

// DriverVersion is cudaDriverGetVersion: the newest CUDA version the driver
// supports, 0 when no driver is installed.
func (l *library) DriverVersion() (int, error) {
	r := l.call(calls.DriverGetVersion, -1)
	if r.code != 0 {
		return 0, l.fail(calls.DriverGetVersion, r, "()")
	}
	return int(int32(r.a)), nil
}

// DeviceName is cuDeviceGetName, after cuInit and cuDeviceGet: the device's
// marketing name. It needs the driver library.
func (l *library) DeviceName(device int) (string, error) {
	if err := l.driverReady(calls.CuDeviceGetName); err != nil {
		return "", err
	}
	if r := l.call(calls.CuInit, device, 0); r.code != 0 {
		return "", l.fail(calls.CuInit, r, "(0) for the name of device %d", device)
	}
	r := l.call(calls.CuDeviceGet, device, cint(device))
	if r.code != 0 {
		return "", l.fail(calls.CuDeviceGet, r, "(%d)", device)
	}
	buf := make([]byte, deviceNameBufferBytes)
	if r := l.callMem(calls.CuDeviceGetName, device, [2]Mem{HostMem(buf)}, uintptr(len(buf)), cint(int(int32(r.a)))); r.code != 0 {
		return "", l.fail(calls.CuDeviceGetName, r, "(device %d)", device)
	}
	name, _, _ := bytes.Cut(buf, []byte{0})
	return string(name), nil
}

// DeviceReset is cudaDeviceReset on device: every allocation, stream and
// setting of the device in this process is destroyed, and a sticky error
// cleared. Memory from before is invalid after.
func (l *library) DeviceReset(device int) error {
	if r := l.call(calls.DeviceReset, device); r.code != 0 {
		return l.fail(calls.DeviceReset, r, "() on device %d", device)
	}
	resetCounter(device).Add(1)
	return nil
}

// deviceResets counts the resets of each device ordinal made through any
// Library: they all share the process's CUDA state.
var deviceResets sync.Map // int -> *atomic.Uint64

func resetCounter(device int) *atomic.Uint64 {
	if c, ok := deviceResets.Load(device); ok {
		return c.(*atomic.Uint64)
	}
	c, _ := deviceResets.LoadOrStore(device, new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

// DeviceResets is how many times DeviceReset succeeded on device through
// any Library of the process. It makes no CUDA call.
func (l *library) DeviceResets(device int) uint64 {
	if c, ok := deviceResets.Load(device); ok {
		return c.(*atomic.Uint64).Load()
	}
	return 0
}

// DeviceCanAccessPeer is cudaDeviceCanAccessPeer: whether device can access
// memory on peer.
func (l *library) DeviceCanAccessPeer(device, peer int) (bool, error) {
	r := l.call(calls.DeviceCanAccessPeer, -1, cint(device), cint(peer))
	if r.code != 0 {
		return false, l.fail(calls.DeviceCanAccessPeer, r, "(%d, %d)", device, peer)
	}
	return int32(r.a) != 0, nil
}

var limits = enum.Table[Limit]{Prefix: "cudaLimit", Names: []string{"StackSize", "PrintfFifoSize", "MallocHeapSize"}, Unknown: "cudaLimit(%d)"}

// pointerAttributes is struct cudaPointerAttributes as CUDA 11 and later lay
// it out, with room after it: CUDA 13 appends localityDomainOrdinal, and a
// later runtime may append more, which must land in memory of ours.
type pointerAttributes struct {
	typ           int32
	device        int32
	devicePointer uint64
	hostPointer   uint64
	_             [12]uint64
}

// PointerAttributes is cudaPointerGetAttributes of p with device selected.
func (l *library) PointerAttributes(device int, p DevicePtr) (PointerAttributes, error) {
	if l.unusable() {
		return PointerAttributes{}, closedError(calls.PointerGetAttributes)
	}
	var a pointerAttributes
	if r := l.callMem(calls.PointerGetAttributes, device, [2]Mem{structMem(&a)}, uintptr(p)); r.code != 0 {
		return PointerAttributes{}, l.fail(calls.PointerGetAttributes, r, "(%s) on device %d", p, device)
	}
	return PointerAttributes{Type: MemoryType(a.typ), Device: int(a.device), DevicePointer: DevicePtr(a.devicePointer), HostPointer: uintptr(a.hostPointer)}, nil
}
