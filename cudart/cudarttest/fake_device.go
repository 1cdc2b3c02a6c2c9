package cudarttest

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// FakeVersion is what RuntimeVersion and DriverVersion report: CUDA 13.0.
const FakeVersion = 13000

// FakeDeviceName is the name every fake device reports.
const FakeDeviceName = "cudapool fake device"

// defaultLimits are CUDA's defaults for the limits DeviceGetLimit knows,
// indexed by cudart.Limit.
var defaultLimits = [3]uint64{
	cudart.LimitStackSize:      1 << 10,
	cudart.LimitPrintfFifoSize: 1 << 20,
	cudart.LimitMallocHeapSize: 8 << 20,
}

// SetDevice is cudaSetDevice. Every other call names its device, so it only
// checks the ordinal.
func (f *Fake) SetDevice(device int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(cudart.CallSetDevice, device); x != nil {
		return x.err(cudart.CallSetDevice, "(%d)", device)
	}
	return nil
}

// DeviceGetLimit is cudaDeviceGetLimit for the stack size, printf FIFO size
// and malloc heap size (8 MiB until set); other limits fail with
// cudaErrorUnsupportedLimit.
func (f *Fake) DeviceGetLimit(device int, l cudart.Limit) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(cudart.CallDeviceGetLimit, device)
	if x == nil {
		x = checkLimit(l)
	}
	if x != nil {
		return 0, x.err(cudart.CallDeviceGetLimit, "(device %d, limit %d)", device, int(l))
	}
	return f.devs[device].limits[l], nil
}

// DeviceSetLimit is cudaDeviceSetLimit; the fake stores the value as given.
// The malloc heap size cannot change once a kernel that calls malloc has
// run on the device (cudaErrorInvalidValue), as CUDA documents.
func (f *Fake) DeviceSetLimit(device int, l cudart.Limit, value uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(cudart.CallDeviceSetLimit, device)
	if x == nil {
		x = checkLimit(l)
	}
	if x == nil {
		x = f.heapFixed(device, l)
	}
	if x != nil {
		return x.err(cudart.CallDeviceSetLimit, "(device %d, limit %d, %s)", device, int(l), bytesize.Format(value))
	}
	f.devs[device].limits[l] = value
	return nil
}

func checkLimit(l cudart.Limit) *failure {
	if l < 0 || int(l) >= len(defaultLimits) {
		return fail(215, "limit %d", int(l))
	}
	return nil
}

// RuntimeVersion is cudaRuntimeGetVersion: FakeVersion.
func (f *Fake) RuntimeVersion() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.enter(cudart.CallRuntimeGetVersion); x != nil {
		return 0, x.err(cudart.CallRuntimeGetVersion, "()")
	}
	return FakeVersion, nil
}

// DriverVersion is cudaDriverGetVersion: FakeVersion.
func (f *Fake) DriverVersion() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.enter(cudart.CallDriverGetVersion); x != nil {
		return 0, x.err(cudart.CallDriverGetVersion, "()")
	}
	return FakeVersion, nil
}

// DeviceName is FakeDeviceName, through the driver calls the binding makes:
// cuInit, cuDeviceGet and cuDeviceGetName.
func (f *Fake) DeviceName(device int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.enter(cudart.CallCuInit); x != nil {
		return "", x.err(cudart.CallCuInit, "(0) for the name of device %d", device)
	}
	if x := f.check(cudart.CallCuDeviceGet, device); x != nil {
		return "", x.err(cudart.CallCuDeviceGet, "(%d)", device)
	}
	if x := f.enter(cudart.CallCuDeviceGetName); x != nil {
		return "", x.err(cudart.CallCuDeviceGetName, "(device %d)", device)
	}
	return FakeDeviceName, nil
}

// GetDeviceFlags is cudaGetDeviceFlags: cudart.DeviceMapHost until set, as
// on a device with unified addressing.
func (f *Fake) GetDeviceFlags(device int) (cudart.DeviceFlags, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(cudart.CallGetDeviceFlags, device); x != nil {
		return 0, x.err(cudart.CallGetDeviceFlags, "(device %d)", device)
	}
	return f.devs[device].flags, nil
}

// SetDeviceFlags is cudaSetDeviceFlags; the fake stores the flags as given.
func (f *Fake) SetDeviceFlags(device int, flags cudart.DeviceFlags) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.check(cudart.CallSetDeviceFlags, device); x != nil {
		return x.err(cudart.CallSetDeviceFlags, "(device %d, 0x%x)", device, uint32(flags))
	}
	f.devs[device].flags = flags
	return nil
}
