package cudart

import "unsafe"

// ret is what one call into CUDA returned: the code, and the values of a
// successful call.
type ret struct {
	a, b   uint64         // a pointer, size, handle, version, flags or limit
	p      unsafe.Pointer // a host pointer
	code   Code
	driver bool // code is a CUresult from the driver rather than a cudaError_t
}

// backend is the loaded CUDA libraries, one method a CUDA call. Only the cgo
// build implements it: without cgo, Open fails before a Lib exists, so the
// exported methods of Lib, which validate arguments and build errors, are
// shared by both builds. Every method that takes dev selects that device in
// the same call as the CUDA call it makes.
type backend interface {
	// text is CUDA's name and message for r's code.
	text(r ret) (name, msg string)
	// close unloads the libraries; nothing may be called after.
	close()

	deviceCount() ret
	memGetInfo(dev int) ret
	malloc(dev int, n uint64) ret
	free(dev int, p DevicePtr) ret
	mallocHost(dev int, n uint64) ret
	freeHost(p unsafe.Pointer) ret
	memcpy(dev int, dst, src Mem, kind MemcpyKind) ret
	memset(dev int, p DevicePtr, value byte, n uint64) ret
	deviceSynchronize(dev int) ret

	streamCreate(dev int) ret
	streamSynchronize(dev int, s Stream) ret
	streamDestroy(dev int, s Stream) ret
	memcpyAsync(dev int, dst, src Mem, kind MemcpyKind, s Stream) ret

	hostAlloc(dev int, n uint64, flags HostAllocFlags) ret
	hostGetDevicePointer(dev int, p unsafe.Pointer) ret
	getDeviceFlags(dev int) ret
	setDeviceFlags(dev int, flags DeviceFlags) ret
	hostRegister(dev int, b []byte, flags HostRegisterFlags) ret
	hostUnregister(dev int, b []byte) ret

	mallocManaged(dev int, n uint64, flags MemAttachFlags) ret
	memPrefetchAsync(dev int, p DevicePtr, n uint64, dst int, s Stream) ret
	mallocAsync(dev int, n uint64, s Stream) ret
	freeAsync(dev int, p DevicePtr, s Stream) ret
	memPoolReleaseThreshold(dev int) ret
	setMemPoolReleaseThreshold(dev int, v uint64) ret

	setDevice(dev int) ret
	deviceGetLimit(dev int, l Limit) ret
	deviceSetLimit(dev int, l Limit, v uint64) ret
	runtimeVersion() ret
	driverVersion() ret
	deviceName(dev int) (string, ret)

	memGetAllocationGranularity(dev int, recommended bool) ret
	memCreate(dev int, n uint64) ret
	memRelease(dev int, h PhysHandle) ret
	memAddressReserve(dev int, n, alignment uint64, hint DevicePtr) ret
	memAddressFree(dev int, p DevicePtr, n uint64) ret
	memMap(dev int, p DevicePtr, n, offset uint64, h PhysHandle) ret
	memUnmap(dev int, p DevicePtr, n uint64) ret
	memSetAccess(dev int, p DevicePtr, n uint64, devices []int) ret
}
