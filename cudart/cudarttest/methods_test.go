package cudarttest_test

import (
	"slices"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// fakeMethods calls each method of cudart.Full on f once, by name, with
// arguments good enough for the fake to make its calls.
func fakeMethods(f *cudarttest.Fake) map[string]func() {
	host := make([]byte, 64)
	d := cudart.DeviceMem(0x1000, 64)
	h := cudart.HostMem(host)
	return map[string]func(){
		"DeviceCount":                 func() { _, _ = f.DeviceCount() },
		"MemGetInfo":                  func() { _, _, _ = f.MemGetInfo(0) },
		"Malloc":                      func() { _, _ = f.Malloc(0, 64) },
		"Free":                        func() { _ = f.Free(0, 0x1000) },
		"MallocHost":                  func() { _, _ = f.MallocHost(0, 0) },
		"FreeHost":                    func() { _ = f.FreeHost(host) },
		"Memcpy":                      func() { _ = f.Memcpy(0, d, h, cudart.HostToDevice) },
		"Memset":                      func() { _ = f.Memset(0, 0x1000, 7, 64) },
		"DeviceSynchronize":           func() { _ = f.DeviceSynchronize(0) },
		"StreamCreate":                func() { _, _ = f.StreamCreate(0) },
		"StreamDevice":                func() { _, _ = f.StreamDevice(0, 0) },
		"StreamSynchronize":           func() { _ = f.StreamSynchronize(0, 0) },
		"StreamQuery":                 func() { _, _ = f.StreamQuery(0, 0) },
		"StreamDestroy":               func() { _ = f.StreamDestroy(0, 1) },
		"MemcpyAsync":                 func() { _ = f.MemcpyAsync(0, h, d, cudart.DeviceToHost, 0) },
		"MemsetAsync":                 func() { _ = f.MemsetAsync(0, 0x1000, 7, 64, 0) },
		"HostAlloc":                   func() { _, _ = f.HostAlloc(0, 0, cudart.HostAllocMapped) },
		"HostGetDevicePointer":        func() { _, _ = f.HostGetDevicePointer(0, host) },
		"GetDeviceFlags":              func() { _, _ = f.GetDeviceFlags(0) },
		"SetDeviceFlags":              func() { _ = f.SetDeviceFlags(0, cudart.DeviceMapHost) },
		"HostRegister":                func() { _ = f.HostRegister(0, nil, cudart.HostRegisterMapped) },
		"HostUnregister":              func() { _ = f.HostUnregister(0, host) },
		"MallocManaged":               func() { _, _ = f.MallocManaged(0, 0, cudart.MemAttachGlobal) },
		"MemPrefetchAsync":            func() { _ = f.MemPrefetchAsync(0, 0x1000, 64, cudart.CPUDevice, 0) },
		"MallocAsync":                 func() { _, _ = f.MallocAsync(0, 0, 0) },
		"FreeAsync":                   func() { _ = f.FreeAsync(0, 0x1000, 0) },
		"MemPoolReleaseThreshold":     func() { _, _ = f.MemPoolReleaseThreshold(0) },
		"SetMemPoolReleaseThreshold":  func() { _ = f.SetMemPoolReleaseThreshold(0, 1<<20) },
		"SetDevice":                   func() { _ = f.SetDevice(0) },
		"DeviceGetLimit":              func() { _, _ = f.DeviceGetLimit(0, cudart.LimitMallocHeapSize) },
		"DeviceSetLimit":              func() { _ = f.DeviceSetLimit(0, cudart.LimitMallocHeapSize, 1<<24) },
		"RuntimeVersion":              func() { _, _ = f.RuntimeVersion() },
		"DriverVersion":               func() { _, _ = f.DriverVersion() },
		"DeviceName":                  func() { _, _ = f.DeviceName(0) },
		"DeviceReset":                 func() { _ = f.DeviceReset(0) },
		"DeviceCanAccessPeer":         func() { _, _ = f.DeviceCanAccessPeer(0, 0) },
		"PointerAttributes":           func() { _, _ = f.PointerAttributes(0, 0x1000) },
		"MemGetAllocationGranularity": func() { _, _ = f.MemGetAllocationGranularity(0, true) },
		"MemCreate":                   func() { _, _ = f.MemCreate(0, 1) },
		"MemGetExportableGranularity": func() { _, _ = f.MemGetExportableGranularity(0, cudart.HandleTypePOSIXFileDescriptor, true) },
		"MemCreateExportable":         func() { _, _ = f.MemCreateExportable(0, 1, cudart.HandleTypePOSIXFileDescriptor) },
		"MemRelease":                  func() { _ = f.MemRelease(1) },
		"MemAddressReserve":           func() { _, _ = f.MemAddressReserve(1, 0, 0) },
		"MemAddressFree":              func() { _ = f.MemAddressFree(0x1000, 1) },
		"MemMap":                      func() { _ = f.MemMap(0x1000, 1, 0, 1) },
		"MemUnmap":                    func() { _ = f.MemUnmap(0x1000, 1) },
		"MemSetAccess":                func() { _ = f.MemSetAccess(0x1000, 1, []int{0}) },
		"ModuleLoadData":              func() { _, _ = f.ModuleLoadData(0, "") },
		"ModuleGetFunction":           func() { _, _ = f.ModuleGetFunction(0, 1, "k") },
		"ModuleUnload":                func() { _ = f.ModuleUnload(0, 1) },
		"LaunchKernel":                func() { _ = f.LaunchKernel(0, 1, cudart.Dim1(1), cudart.Dim1(1), 0, 0) },
		"EventCreate":                 func() { _, _ = f.EventCreate(0) },
		"EventRecord":                 func() { _ = f.EventRecord(0, 1, 0) },
		"StreamWaitEvent":             func() { _ = f.StreamWaitEvent(0, 0, 1) },
		"EventSynchronize":            func() { _ = f.EventSynchronize(0, 1) },
		"EventQuery":                  func() { _, _ = f.EventQuery(0, 1) },
		"EventElapsedTime":            func() { _, _ = f.EventElapsedTime(0, 1, 2) },
		"EventDestroy":                func() { _ = f.EventDestroy(0, 1) },
		"StreamBeginCapture":          func() { _ = f.StreamBeginCapture(0, 0, cudart.CaptureModeGlobal) },
		"StreamEndCapture":            func() { _, _ = f.StreamEndCapture(0, 0) },
		"GraphInstantiate":            func() { _, _ = f.GraphInstantiate(0, 1) },
		"GraphLaunch":                 func() { _ = f.GraphLaunch(0, 1, 0) },
		"GraphExecDestroy":            func() { _ = f.GraphExecDestroy(0, 1) },
		"GraphDestroy":                func() { _ = f.GraphDestroy(0, 1) },
		"GraphNodes":                  func() { _, _ = f.GraphNodes(0, 1) },
		"GraphNodeType":               func() { _, _ = f.GraphNodeType(0, 1) },
	}
}

// TestFakeMethodsMakeTheTablesCalls: each method of the fake makes exactly
// the calls cudart's table says the binding's method makes, in order, so
// that a test counting or failing the fake's calls holds for CUDA too.
func TestFakeMethodsMakeTheTablesCalls(t *testing.T) {
	for name := range fakeMethods(cudarttest.NewFake()) {
		assert.NotEmpty(t, calls.Of(name), "%s makes no call of cudart's table", name)
	}
	var tableMethods []string
	for _, c := range calls.All() {
		tableMethods = append(tableMethods, c.Methods()...)
	}
	slices.Sort(tableMethods)
	for _, name := range slices.Compact(tableMethods) {
		t.Run(name, func(t *testing.T) {
			f := cudarttest.NewFake()
			call, ok := fakeMethods(f)[name]
			require.True(t, ok, "no call of %s here", name)
			call()
			var want []string
			for _, c := range calls.Of(name) {
				want = append(want, c.String())
			}
			assert.Equal(t, want, f.Calls())
		})
	}
}
