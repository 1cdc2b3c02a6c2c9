package cudart

// The C structures the binding passes to CUDA, laid out as the C ABI lays
// them out on 64-bit Linux (abi_test.go checks sizes and offsets).

// Values of CUDA enums the binding passes.
const (
	locationDevice        = 1 // cudaMemLocationTypeDevice, CU_MEM_LOCATION_TYPE_DEVICE
	locationHost          = 2 // cudaMemLocationTypeHost
	allocationPinned      = 1 // CU_MEM_ALLOCATION_TYPE_PINNED
	accessReadWrite       = 3 // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
	poolReleaseThreshold  = 4 // cudaMemPoolAttrReleaseThreshold
	deviceNameBufferBytes = 256
)

// memLocation is cudaMemLocation and CUmemLocation.
type memLocation struct {
	typ int32
	id  int32
}

// locationOf is where a prefetch to dev (CPUDevice for the host) goes.
func locationOf(dev int) memLocation {
	if dev == CPUDevice {
		return memLocation{typ: locationHost}
	}
	return memLocation{typ: locationDevice, id: int32(cint(dev))}
}

// word is l passed by value: a struct of two ints travels in one integer
// register on amd64 and arm64, the first int in the low half.
func (l memLocation) word() uintptr {
	return uintptr(uint32(l.typ)) | uintptr(uint32(l.id))<<32
}

// allocProp is CUmemAllocationProp (CUDA 10.2 to 13).
// The binding sets the type, the handle types and the location; the blank
// fields, zero, are win32HandleMetaData (void *) and allocFlags
// (compressionType, gpuDirectRDMACapable, usage, reserved[4]).
type allocProp struct {
	typ      int32  // CUmemAllocationType
	handles  uint32 // requestedHandleTypes, a CUmemAllocationHandleType
	location memLocation
	_        uintptr
	_        [8]uint8
}

// pinnedOn is the allocation property of pinned device memory on dev whose
// handle exports as each of types.
func pinnedOn(dev int, types HandleType) *allocProp {
	return &allocProp{typ: allocationPinned, handles: uint32(types), location: memLocation{typ: locationDevice, id: int32(cint(dev))}}
}

// accessDesc is CUmemAccessDesc.
type accessDesc struct {
	location memLocation
	flags    int32 // CUmemAccess_flags
}

// readWriteFor is one read-write access descriptor per device.
func readWriteFor(devices []int) []accessDesc {
	d := make([]accessDesc, len(devices))
	for i, dev := range devices {
		d[i] = accessDesc{location: memLocation{typ: locationDevice, id: int32(cint(dev))}, flags: accessReadWrite}
	}
	return d
}
