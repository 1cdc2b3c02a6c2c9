package cudart

// NVTX's numbers and the C structs of its memory extension, laid out as the
// C ABI lays them out on 64-bit platforms (nvtx_abi_test.go checks sizes and
// offsets). annotations_nvtx.go fills them in and hands them to a tool.

// NVTX's numbers (nvToolsExt.h, nvtxTypes.h, nvToolsExtMem.h).
const (
	nvtxVersion = 3

	// getExportTable's table ids.
	etidCallbacks   = 1
	etidVersionInfo = 3

	// The core modules a tool may ask GetModuleFunctionTable for, and the
	// entries of their tables (NVTX_CBID_*_SIZE). Entry 0 is unused.
	moduleCore  = 1
	moduleCore2 = 5
	moduleSync  = 6
	coreSize    = 16
	core2Size   = 16
	syncSize    = 7
	// cbidDomainCreateA is nvtxDomainCreateA's entry in the CORE2 table.
	cbidDomainCreateA = 12

	// The memory extension, as its module describes itself.
	extModuleIDMem = 1
	extCompatIDMem = 0x0102
	memSlotCount   = 63

	// The memory extension's callback ids. The function of id k is in the
	// segment's slot k-1, which is memSlots[k]: so compute-sanitizer fills
	// them (2025.3, seen on a GPU), as the extension's first C
	// implementation and nvtxExtImplMemCudaRt_v1.h read them. The
	// nvtxExtImplMem_v1.h of NVTX 3.2 reads slot k instead, where that tool
	// has put the function of id k+1.
	cbHeapRegister      = 1
	cbHeapUnregister    = 2
	cbHeapReset         = 3
	cbRegionsRegister   = 4
	cbRegionsUnregister = 6
	cbRegionsName       = 7

	// What memSlots[0] says of the module, and what an empty function slot
	// becomes once the tool's init has returned.
	extFresh    = 0
	extDisabled = 1
	extStarting = 2
	extLoaded   = 3

	heapUsageSubAllocator = 1 // NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR
	memTypeVirtualAddress = 1 // NVTX_MEM_TYPE_VIRTUAL_ADDRESS
	messageTypeASCII      = 1 // NVTX_MESSAGE_TYPE_ASCII
	regionRefPointer      = 1 // NVTX_MEM_REGION_REF_TYPE_POINTER
)

// exportCallbacks is NvtxExportTableCallbacks.
type exportCallbacks struct {
	structSize             uintptr
	getModuleFunctionTable uintptr
}

// exportVersionInfo is NvtxExportTableVersionInfo.
type exportVersionInfo struct {
	structSize              uintptr
	version                 uint32
	_                       uint32
	setInjectionNvtxVersion uintptr
}

// extModuleSegment is nvtxExtModuleSegment_t.
type extModuleSegment struct {
	segmentID     uintptr
	slotCount     uintptr
	functionSlots uintptr
}

// extModuleInfo is nvtxExtModuleInfo_t.
type extModuleInfo struct {
	nvtxVer           uint16
	structSize        uint16
	moduleID          uint16
	compatID          uint16
	segmentsCount     uintptr
	segments          uintptr
	getExportFunction uintptr
	extInfo           uintptr
}

// memVirtualRangeDesc is nvtxMemVirtualRangeDesc_t: the size comes first.
type memVirtualRangeDesc struct {
	size uintptr
	ptr  uintptr
}

// memHeapDesc is nvtxMemHeapDesc_t.
type memHeapDesc struct {
	extCompatID          uint16
	structSize           uint16
	_                    uint32
	usage                uint32
	typ                  uint32
	typeSpecificDescSize uintptr
	typeSpecificDesc     uintptr
	category             uint32
	messageType          uint32
	message              uintptr // nvtxMessageValue_t: the ASCII member
}

// memRegionsRegisterBatch is nvtxMemRegionsRegisterBatch_t.
type memRegionsRegisterBatch struct {
	extCompatID             uint16
	structSize              uint16
	regionType              uint32
	heap                    uintptr
	regionCount             uintptr
	regionDescElementSize   uintptr
	regionDescElements      uintptr
	regionHandleElementsOut uintptr
}

// memRegionsUnregisterBatch is nvtxMemRegionsUnregisterBatch_t.
type memRegionsUnregisterBatch struct {
	extCompatID    uint16
	structSize     uint16
	refType        uint32
	refCount       uintptr
	refElementSize uintptr
	refElements    uintptr // nvtxMemRegionRef_t: the pointer member
}

// memRegionNameDesc is nvtxMemRegionNameDesc_t.
type memRegionNameDesc struct {
	regionRefType uint32
	nameType      uint32
	region        uintptr
	name          uintptr
	category      uint32
	_             uint32
}

// memRegionsNameBatch is nvtxMemRegionsNameBatch_t.
type memRegionsNameBatch struct {
	extCompatID       uint16
	structSize        uint16
	_                 uint32
	regionCount       uintptr
	regionElementSize uintptr
	regionElements    uintptr
	_                 uintptr
}
