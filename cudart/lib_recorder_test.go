package cudart

import (
	"fmt"
	"unsafe"
)

// recorder is a backend that records each CUDA call it is asked to make, with
// its device, and returns the code set for that call's name.
type recorder struct {
	calls  []string        // "cudaMalloc@0": name and device of each call
	codes  map[string]Code // what a call of that name returns; 0 when absent
	closes int
	copies []uint64 // the byte count of each memcpy and memcpyAsync
}

func newRecorder() *recorder { return &recorder{codes: map[string]Code{}} }

// newRecorderLib is a Lib over rec (a recorder), with the driver loaded unless driverErr.
func newRecorderLib(rec backend, driverErr error) *Lib {
	return &Lib{be: rec, path: "recorder", driverErr: driverErr}
}

func (f *recorder) call(name string, dev int) ret {
	f.calls = append(f.calls, fmt.Sprintf("%s@%d", name, dev))
	return ret{a: 0x1000, b: 0x2000, p: unsafe.Pointer(f), code: f.codes[name], driver: name[:2] == "cu" && name[:4] != "cuda"}
}

func (f *recorder) text(r ret) (string, string) {
	if r.driver {
		return fmt.Sprintf("CUDA_ERROR_%d", r.code), "recorded driver error"
	}
	return fmt.Sprintf("cudaError%d", r.code), "recorded runtime error"
}

func (f *recorder) close() { f.closes++ }

func (f *recorder) deviceCount() ret                 { return f.call("cudaGetDeviceCount", -1) }
func (f *recorder) memGetInfo(dev int) ret           { return f.call("cudaMemGetInfo", dev) }
func (f *recorder) malloc(dev int, _ uint64) ret     { return f.call("cudaMalloc", dev) }
func (f *recorder) free(dev int, _ DevicePtr) ret    { return f.call("cudaFree", dev) }
func (f *recorder) mallocHost(dev int, _ uint64) ret { return f.call("cudaMallocHost", dev) }
func (f *recorder) freeHost(unsafe.Pointer) ret      { return f.call("cudaFreeHost", -1) }
func (f *recorder) memset(dev int, _ DevicePtr, _ byte, _ uint64) ret {
	return f.call("cudaMemset", dev)
}
func (f *recorder) deviceSynchronize(dev int) ret { return f.call("cudaDeviceSynchronize", dev) }
func (f *recorder) memcpy(dev int, dst, _ Mem, _ MemcpyKind) ret {
	f.copies = append(f.copies, dst.Len())
	return f.call("cudaMemcpy", dev)
}

func (f *recorder) streamCreate(dev int) ret { return f.call("cudaStreamCreate", dev) }
func (f *recorder) streamSynchronize(dev int, _ Stream) ret {
	return f.call("cudaStreamSynchronize", dev)
}
func (f *recorder) streamDestroy(dev int, _ Stream) ret { return f.call("cudaStreamDestroy", dev) }
func (f *recorder) memcpyAsync(dev int, dst, _ Mem, _ MemcpyKind, _ Stream) ret {
	f.copies = append(f.copies, dst.Len())
	return f.call("cudaMemcpyAsync", dev)
}

func (f *recorder) hostAlloc(dev int, _ uint64, _ HostAllocFlags) ret {
	return f.call("cudaHostAlloc", dev)
}
func (f *recorder) hostGetDevicePointer(dev int, _ unsafe.Pointer) ret {
	return f.call("cudaHostGetDevicePointer", dev)
}
func (f *recorder) getDeviceFlags(dev int) ret { return f.call("cudaGetDeviceFlags", dev) }
func (f *recorder) setDeviceFlags(dev int, _ DeviceFlags) ret {
	return f.call("cudaSetDeviceFlags", dev)
}
func (f *recorder) hostRegister(dev int, _ []byte, _ HostRegisterFlags) ret {
	return f.call("cudaHostRegister", dev)
}
func (f *recorder) hostUnregister(dev int, _ []byte) ret { return f.call("cudaHostUnregister", dev) }

func (f *recorder) mallocManaged(dev int, _ uint64, _ MemAttachFlags) ret {
	return f.call("cudaMallocManaged", dev)
}
func (f *recorder) memPrefetchAsync(dev int, _ DevicePtr, _ uint64, _ int, _ Stream) ret {
	return f.call("cudaMemPrefetchAsync", dev)
}
func (f *recorder) mallocAsync(dev int, _ uint64, _ Stream) ret {
	return f.call("cudaMallocAsync", dev)
}
func (f *recorder) freeAsync(dev int, _ DevicePtr, _ Stream) ret {
	return f.call("cudaFreeAsync", dev)
}
func (f *recorder) memPoolReleaseThreshold(dev int) ret {
	return f.call("cudaMemPoolGetAttribute", dev)
}
func (f *recorder) setMemPoolReleaseThreshold(dev int, _ uint64) ret {
	return f.call("cudaMemPoolSetAttribute", dev)
}

func (f *recorder) setDevice(dev int) ret { return f.call("cudaSetDevice", dev) }
func (f *recorder) deviceGetLimit(dev int, _ Limit) ret {
	return f.call("cudaDeviceGetLimit", dev)
}
func (f *recorder) deviceSetLimit(dev int, _ Limit, _ uint64) ret {
	return f.call("cudaDeviceSetLimit", dev)
}
func (f *recorder) runtimeVersion() ret { return f.call("cudaRuntimeGetVersion", -1) }
func (f *recorder) driverVersion() ret  { return f.call("cudaDriverGetVersion", -1) }
func (f *recorder) deviceName(dev int) (string, ret) {
	return "recorded device", f.call("cuDeviceGetName", dev)
}

func (f *recorder) memGetAllocationGranularity(dev int, _ bool) ret {
	return f.call("cuMemGetAllocationGranularity", dev)
}
func (f *recorder) memCreate(dev int, _ uint64) ret      { return f.call("cuMemCreate", dev) }
func (f *recorder) memRelease(dev int, _ PhysHandle) ret { return f.call("cuMemRelease", dev) }
func (f *recorder) memAddressReserve(dev int, _, _ uint64, _ DevicePtr) ret {
	return f.call("cuMemAddressReserve", dev)
}
func (f *recorder) memAddressFree(dev int, _ DevicePtr, _ uint64) ret {
	return f.call("cuMemAddressFree", dev)
}
func (f *recorder) memMap(dev int, _ DevicePtr, _, _ uint64, _ PhysHandle) ret {
	return f.call("cuMemMap", dev)
}
func (f *recorder) memUnmap(dev int, _ DevicePtr, _ uint64) ret { return f.call("cuMemUnmap", dev) }
func (f *recorder) memSetAccess(dev int, _ DevicePtr, _ uint64, _ []int) ret {
	return f.call("cuMemSetAccess", dev)
}
