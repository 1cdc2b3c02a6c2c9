package cudarttest

import (
	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
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
	if x := f.check(calls.SetDevice, device); x != nil {
		return x.err(calls.SetDevice, "(%d)", device)
	}
	return nil
}

// DeviceGetLimit is cudaDeviceGetLimit for the stack size, printf FIFO size
// and malloc heap size (8 MiB until set); CUDA's other limits fail with
// cudaErrorUnsupportedLimit, and values that are no limit with
// cudaErrorInvalidValue.
func (f *Fake) DeviceGetLimit(device int, l cudart.Limit) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(calls.DeviceGetLimit, device)
	if x == nil {
		x = checkLimit(l)
	}
	if x != nil {
		return 0, x.err(calls.DeviceGetLimit, "(device %d, limit %d)", device, int(l))
	}
	return f.devs[device].limits[l], nil
}

// DeviceSetLimit is cudaDeviceSetLimit for the limits DeviceGetLimit
// knows. The malloc heap is device memory: CUDA takes it when it loads the
// module that uses it, which the fake, having no modules, takes to be now,
// so a heap set larger than 8 MiB counts against the device's free memory in
// whole pages, and one that does not fit fails with
// cudaErrorMemoryAllocation. The heap size cannot change once a kernel that
// calls malloc has run on the device (cudaErrorInvalidValue), as CUDA
// documents.
func (f *Fake) DeviceSetLimit(device int, l cudart.Limit, value uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.check(calls.DeviceSetLimit, device)
	if x == nil {
		x = checkLimit(l)
	}
	if x == nil {
		x = f.heapFixed(device, l)
	}
	if x == nil && l == cudart.LimitMallocHeapSize {
		x = f.setHeap(device, value)
	}
	if x != nil {
		return x.err(calls.DeviceSetLimit, "(device %d, limit %d, %s)", device, int(l), bytesize.Format(value))
	}
	f.devs[device].limits[l] = value
	return nil
}

// setHeap charges the heap of device beyond the default's 8 MiB, which
// every context has, in whole pages.
func (f *Fake) setHeap(device int, value uint64) *failure {
	ds := &f.devs[device]
	extra, err := align.Up(value-min(value, defaultLimits[cudart.LimitMallocHeapSize]), chunkBytes)
	if err != nil {
		return fail(2, "a heap of %s is more than any device holds", bytesize.Format(value))
	}
	ds.used -= ds.heap
	if x := f.charge(device, extra); x != nil {
		ds.used += ds.heap
		return x
	}
	ds.heap = extra
	return nil
}

// lastCUDALimit is cudaLimitPersistingL2CacheSize, the last cudaLimit.
const lastCUDALimit = 6

// checkLimit refuses a value that is no cudaLimit with
// cudaErrorInvalidValue, as CUDA does, and the limits the fake does not model
// with cudaErrorUnsupportedLimit.
func checkLimit(l cudart.Limit) *failure {
	if l < 0 || l > lastCUDALimit {
		return invalid("%d is not a cudaLimit", int(l))
	}
	if int(l) >= len(defaultLimits) {
		return fail(215, "the fake models only the stack, printf FIFO and malloc heap limits, not limit %d", int(l))
	}
	return nil
}

// RuntimeVersion is cudaRuntimeGetVersion: FakeVersion.
func (f *Fake) RuntimeVersion() (int, error) { return f.version(calls.RuntimeGetVersion) }

// DriverVersion is cudaDriverGetVersion: FakeVersion.
func (f *Fake) DriverVersion() (int, error) { return f.version(calls.DriverGetVersion) }

// version is FakeVersion through c, the runtime's or the driver's query.
func (f *Fake) version(c calls.Call) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.enter(c); x != nil {
		return 0, x.err(c, "()")
	}
	return FakeVersion, nil
}

// DeviceName is FakeDeviceName, through the driver calls the binding makes:
// cuInit, cuDeviceGet and cuDeviceGetName.
func (f *Fake) DeviceName(device int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if x := f.enter(calls.CuInit); x != nil {
		return "", x.err(calls.CuInit, "(0) for the name of device %d", device)
	}
	if x := f.check(calls.CuDeviceGet, device); x != nil {
		return "", x.err(calls.CuDeviceGet, "(%d)", device)
	}
	if x := f.enter(calls.CuDeviceGetName); x != nil {
		return "", x.err(calls.CuDeviceGetName, "(device %d)", device)
	}
	return FakeDeviceName, nil
}

// Device flag bits that cudaSetDeviceFlags knows: the scheduling policy
// (cudaDeviceScheduleMask), cudaDeviceMapHost, cudaDeviceLmemResizeToMax
// and cudaDeviceSyncMemops.
const (
	scheduleMask   cudart.DeviceFlags = 0x07
	knownFlagsMask                    = scheduleMask | cudart.DeviceMapHost | 0x10 | 0x80
)

// DeviceCanAccessPeer is cudaDeviceCanAccessPeer: true for the pairs of
// WithPeerAccess, false for a device and itself, as in CUDA.
func (f *Fake) DeviceCanAccessPeer(device, peer int) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.enterOn(calls.DeviceCanAccessPeer, device)
	if x == nil {
		x = f.device(peer)
	}
	if x != nil {
		return false, x.err(calls.DeviceCanAccessPeer, "(%d, %d)", device, peer)
	}
	return f.opts.peers[device]&(1<<peer) != 0, nil
}
