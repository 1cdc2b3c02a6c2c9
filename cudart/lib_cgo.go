//go:build cgo

package cudart

/*
#include <stdlib.h>
#include "lib_cgo.h"
*/
import "C"

import (
	"math"
	"unsafe"
)

// cgoBackend calls CUDA through the trampolines in lib_cgo.c. lib is C memory,
// written at load and read-only until close frees it.
type cgoBackend struct {
	lib *C.cp_lib
}

// cint converts a device ordinal or enum for C. A value that does not fit
// becomes one CUDA rejects, rather than wrapping around to a valid one.
func cint[T ~int](v T) C.int {
	if int(v) != int(int32(v)) {
		return math.MinInt32
	}
	return C.int(v)
}

func conv(r C.cp_ret) ret {
	return ret{a: uint64(r.a), b: uint64(r.b), p: r.p, code: Code(r.err), driver: r.driver != 0}
}

// ends splits a copy's operands into the host pointer and device address the
// trampoline takes: a host Mem passes its slice's memory, a device Mem its
// address with a nil pointer.
func ends(m Mem) (unsafe.Pointer, C.uintptr_t) {
	if m.isH {
		return unsafe.Pointer(unsafe.SliceData(m.host)), 0
	}
	return nil, C.uintptr_t(m.dev)
}

func (b *cgoBackend) text(r ret) (name, msg string) {
	drv := C.int(0)
	if r.driver {
		drv = 1
	}
	t := C.cudapool_error_text(b.lib, C.cp_err(r.code), drv)
	return C.GoString(t.name), C.GoString(t.msg)
}

func (b *cgoBackend) close() {
	C.cudapool_dlclose(b.lib.drv_handle)
	C.cudapool_dlclose(b.lib.rt_handle)
	C.free(unsafe.Pointer(b.lib))
	b.lib = nil
}

func (b *cgoBackend) deviceCount() ret { return conv(C.cudapool_device_count(b.lib)) }

func (b *cgoBackend) memGetInfo(dev int) ret {
	return conv(C.cudapool_mem_get_info(b.lib, cint(dev)))
}

func (b *cgoBackend) malloc(dev int, n uint64) ret {
	return conv(C.cudapool_malloc(b.lib, cint(dev), C.size_t(n)))
}

func (b *cgoBackend) free(dev int, p DevicePtr) ret {
	return conv(C.cudapool_free(b.lib, cint(dev), C.uintptr_t(p)))
}

func (b *cgoBackend) mallocHost(dev int, n uint64) ret {
	return conv(C.cudapool_malloc_host(b.lib, cint(dev), C.size_t(n)))
}

func (b *cgoBackend) freeHost(p unsafe.Pointer) ret {
	return conv(C.cudapool_free_host(b.lib, p))
}

func (b *cgoBackend) memcpy(dev int, dst, src Mem, kind MemcpyKind) ret {
	dh, dd := ends(dst)
	sh, sd := ends(src)
	return conv(C.cudapool_memcpy(b.lib, cint(dev), dh, dd, sh, sd, C.size_t(dst.n), cint(kind)))
}

func (b *cgoBackend) memset(dev int, p DevicePtr, value byte, n uint64) ret {
	return conv(C.cudapool_memset(b.lib, cint(dev), C.uintptr_t(p), C.int(value), C.size_t(n)))
}

func (b *cgoBackend) deviceSynchronize(dev int) ret {
	return conv(C.cudapool_device_synchronize(b.lib, cint(dev)))
}

func (b *cgoBackend) streamCreate(dev int) ret {
	return conv(C.cudapool_stream_create(b.lib, cint(dev)))
}

func (b *cgoBackend) streamSynchronize(dev int, s Stream) ret {
	return conv(C.cudapool_stream_synchronize(b.lib, cint(dev), C.uintptr_t(s)))
}

func (b *cgoBackend) streamDestroy(dev int, s Stream) ret {
	return conv(C.cudapool_stream_destroy(b.lib, cint(dev), C.uintptr_t(s)))
}

func (b *cgoBackend) memcpyAsync(dev int, dst, src Mem, kind MemcpyKind, s Stream) ret {
	dh, dd := ends(dst)
	sh, sd := ends(src)
	return conv(C.cudapool_memcpy_async(b.lib, cint(dev), dh, dd, sh, sd, C.size_t(dst.n), cint(kind), C.uintptr_t(s)))
}

func (b *cgoBackend) hostAlloc(dev int, n uint64, flags HostAllocFlags) ret {
	return conv(C.cudapool_host_alloc(b.lib, cint(dev), C.size_t(n), C.uint(flags)))
}

func (b *cgoBackend) hostGetDevicePointer(dev int, p unsafe.Pointer) ret {
	return conv(C.cudapool_host_get_device_pointer(b.lib, cint(dev), p))
}

func (b *cgoBackend) getDeviceFlags(dev int) ret {
	return conv(C.cudapool_get_device_flags(b.lib, cint(dev)))
}

func (b *cgoBackend) setDeviceFlags(dev int, flags DeviceFlags) ret {
	return conv(C.cudapool_set_device_flags(b.lib, cint(dev), C.uint(flags)))
}

func (b *cgoBackend) hostRegister(dev int, buf []byte, flags HostRegisterFlags) ret {
	return conv(C.cudapool_host_register(b.lib, cint(dev), unsafe.Pointer(unsafe.SliceData(buf)), C.size_t(len(buf)), C.uint(flags)))
}

func (b *cgoBackend) hostUnregister(dev int, buf []byte) ret {
	return conv(C.cudapool_host_unregister(b.lib, cint(dev), unsafe.Pointer(unsafe.SliceData(buf))))
}

func (b *cgoBackend) mallocManaged(dev int, n uint64, flags MemAttachFlags) ret {
	return conv(C.cudapool_malloc_managed(b.lib, cint(dev), C.size_t(n), C.uint(flags)))
}

func (b *cgoBackend) memPrefetchAsync(dev int, p DevicePtr, n uint64, dst int, s Stream) ret {
	return conv(C.cudapool_mem_prefetch_async(b.lib, cint(dev), C.uintptr_t(p), C.size_t(n), cint(dst), C.uintptr_t(s)))
}

func (b *cgoBackend) mallocAsync(dev int, n uint64, s Stream) ret {
	return conv(C.cudapool_malloc_async(b.lib, cint(dev), C.size_t(n), C.uintptr_t(s)))
}

func (b *cgoBackend) freeAsync(dev int, p DevicePtr, s Stream) ret {
	return conv(C.cudapool_free_async(b.lib, cint(dev), C.uintptr_t(p), C.uintptr_t(s)))
}

func (b *cgoBackend) memPoolReleaseThreshold(dev int) ret {
	return conv(C.cudapool_mem_pool_threshold(b.lib, cint(dev)))
}

func (b *cgoBackend) setMemPoolReleaseThreshold(dev int, v uint64) ret {
	return conv(C.cudapool_set_mem_pool_threshold(b.lib, cint(dev), C.uint64_t(v)))
}

func (b *cgoBackend) setDevice(dev int) ret { return conv(C.cudapool_set_device(b.lib, cint(dev))) }

func (b *cgoBackend) deviceGetLimit(dev int, l Limit) ret {
	return conv(C.cudapool_device_get_limit(b.lib, cint(dev), cint(l)))
}

func (b *cgoBackend) deviceSetLimit(dev int, l Limit, v uint64) ret {
	return conv(C.cudapool_device_set_limit(b.lib, cint(dev), cint(l), C.size_t(v)))
}

func (b *cgoBackend) runtimeVersion() ret { return conv(C.cudapool_runtime_version(b.lib)) }

func (b *cgoBackend) driverVersion() ret { return conv(C.cudapool_driver_version(b.lib)) }

func (b *cgoBackend) deviceName(dev int) (string, ret) {
	n := C.cudapool_device_name(b.lib, cint(dev))
	r := conv(n.r)
	if r.code != 0 {
		return "", r
	}
	return C.GoString(&n.name[0]), r
}

func (b *cgoBackend) memGetAllocationGranularity(dev int, recommended bool) ret {
	rec := C.int(0)
	if recommended {
		rec = 1
	}
	return conv(C.cudapool_mem_granularity(b.lib, cint(dev), rec))
}

func (b *cgoBackend) memCreate(dev int, n uint64) ret {
	return conv(C.cudapool_mem_create(b.lib, cint(dev), C.size_t(n)))
}

func (b *cgoBackend) memRelease(dev int, h PhysHandle) ret {
	return conv(C.cudapool_mem_release(b.lib, cint(dev), C.cp_handle(h)))
}

func (b *cgoBackend) memAddressReserve(dev int, n, alignment uint64, hint DevicePtr) ret {
	return conv(C.cudapool_mem_address_reserve(b.lib, cint(dev), C.size_t(n), C.size_t(alignment), C.uintptr_t(hint)))
}

func (b *cgoBackend) memAddressFree(dev int, p DevicePtr, n uint64) ret {
	return conv(C.cudapool_mem_address_free(b.lib, cint(dev), C.uintptr_t(p), C.size_t(n)))
}

func (b *cgoBackend) memMap(dev int, p DevicePtr, n, offset uint64, h PhysHandle) ret {
	return conv(C.cudapool_mem_map(b.lib, cint(dev), C.uintptr_t(p), C.size_t(n), C.size_t(offset), C.cp_handle(h)))
}

func (b *cgoBackend) memUnmap(dev int, p DevicePtr, n uint64) ret {
	return conv(C.cudapool_mem_unmap(b.lib, cint(dev), C.uintptr_t(p), C.size_t(n)))
}

func (b *cgoBackend) memSetAccess(dev int, p DevicePtr, n uint64, devices []int) ret {
	ids := make([]C.int, len(devices))
	for i, d := range devices {
		ids[i] = cint(d)
	}
	return conv(C.cudapool_mem_set_access(b.lib, cint(dev), C.uintptr_t(p), C.size_t(n), &ids[0], C.size_t(len(ids))))
}
