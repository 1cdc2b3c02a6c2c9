package cudart

import (
	"math/bits"
	"runtime"
	"sync"

	"github.com/cudapool/cudapool/internal/dl"
)

// This file attaches an NVTX tool the way NVTX's C code does (nvtxInit.h,
// nvtxExtInit.h) and hands it the memory extension's structs (annotations_nvtx_abi.go)
// laid out as nvToolsExtMem.h declares them, so that compute-sanitizer or
// Nsight Systems hear the binding's annotations as they would a C program's,
// with no NVTX header or C compiler at build time. The structs are filled in
// here, their addresses and C strings made by internal/dl.
//
// A tool may keep what it is given at initialisation (the export tables, the
// function tables, the slots it fills, the module description) until the
// process ends, so all of it is package-level variables, which never move
// and are never freed. What one call hands over (descriptors, batches, names)
// is one heap object, kept alive until the call returns.

// injectionEnv is the variable a tool sets to the path of its injection
// library; NVTX reads the one of the process's pointer size.
func injectionEnv() string {
	if bits.UintSize == 32 {
		return "NVTX_INJECTION32_PATH"
	}
	return "NVTX_INJECTION64_PATH"
}

// What tools are given to keep. The function tables hold the address of
// each slot by callback id, entry 0 empty and one more NULL after the last,
// as NVTX's own tables do, so that a tool reading one entry too far finds
// NULL rather than the next table.
var (
	callbacksTable   exportCallbacks
	versionInfoTable exportVersionInfo
	// getExportTable is the C function pointer of exportTable.
	getExportTable uintptr
	exportOnce     sync.Once

	coreSlots  [coreSize]uintptr
	core2Slots [core2Size]uintptr
	syncSlots  [syncSize]uintptr
	coreTable  [coreSize + 1]uintptr
	core2Table [core2Size + 1]uintptr
	syncTable  [syncSize + 1]uintptr

	// memSlots[0] is the memory module's state, the rest its functions.
	memSlots   [1 + memSlotCount]uintptr
	memSegment extModuleSegment
	memModule  extModuleInfo

	domainName = [...]byte{'c', 'u', 'd', 'a', 'p', 'o', 'o', 'l', 0}

	// loads serialises loadNVTX, since every load uses the variables above.
	loads sync.Mutex
)

// makeExportTables fills the export tables once: callbacks are
// few and never freed, and a tool may still call those it was given.
func makeExportTables() {
	callbacksTable = exportCallbacks{
		structSize:             dl.Sizeof(callbacksTable),
		getModuleFunctionTable: dl.NewCallback(moduleFunctionTable),
	}
	versionInfoTable = exportVersionInfo{
		structSize:              dl.Sizeof(versionInfoTable),
		version:                 nvtxVersion,
		setInjectionNvtxVersion: dl.NewCallback(setInjectionNvtxVersion),
	}
	for i := 1; i < coreSize; i++ {
		coreTable[i] = dl.Addr(&coreSlots[i])
	}
	for i := 1; i < core2Size; i++ {
		core2Table[i] = dl.Addr(&core2Slots[i])
	}
	for i := 1; i < syncSize; i++ {
		syncTable[i] = dl.Addr(&syncSlots[i])
	}
	getExportTable = dl.NewCallback(exportTable)
}

// exportTable is nvtxGetExportTable: the table a tool asks for by id, or
// NULL.
func exportTable(id uint32) uintptr {
	switch id {
	case etidCallbacks:
		return dl.Addr(&callbacksTable)
	case etidVersionInfo:
		return dl.Addr(&versionInfoTable)
	}
	return 0
}

// moduleFunctionTable is GetModuleFunctionTable: the table of a core
// module and its number of entries, or 0 for a module the binding does not
// offer (the CUDA, CUDA runtime and OpenCL naming calls).
func moduleFunctionTable(module uint32, table *uintptr, size *uint32) int32 {
	var t []uintptr
	switch module {
	case moduleCore:
		t = coreTable[:]
	case moduleCore2:
		t = core2Table[:]
	case moduleSync:
		t = syncTable[:]
	default:
		return 0
	}
	if size != nil {
		*size = uint32(len(t) - 1)
	}
	if table != nil {
		*table = dl.Addr(&t[0])
	}
	return 1
}

// setInjectionNvtxVersion is what a tool calls to say which NVTX it
// speaks; NVTX reserves it and so does the binding.
func setInjectionNvtxVersion(uint32) {}

// nvtxTool is an attached tool: the domain the binding annotates in and the
// memory functions the tool filled in, by callback id.
type nvtxTool struct {
	domain uintptr
	fns    [cbRegionsName + 1]uintptr // 0 where the tool has none
}

// loadNVTX attaches the tool whose injection library is path, as NVTX's C
// code does on the first call of a program: the core init, then the memory
// extension's. It returns nil, and annotations are off, when path is empty,
// does not load, lacks the extension's entry point, or the tool fails its
// init or leaves one of the four functions a sub-allocator cannot do
// without (heap and regions, register and unregister).
func loadNVTX(path string) *nvtxTool {
	if path == "" {
		return nil
	}
	loads.Lock()
	defer loads.Unlock()
	// NVTX's own loader leaves a tool's symbols to be bound on first call.
	tool, err := dl.Open([]string{path}, nil, dl.Lazy)
	if err != nil {
		return nil
	}
	coreOK := false
	if fn := tool.Sym("InitializeInjectionNvtx2"); fn != 0 {
		coreOK = initCore(fn)
	}
	extInit := tool.Sym("InitializeInjectionNvtxExtension")
	if extInit == 0 {
		// NVTX unloads a library whose code is not in use; once a core
		// init has succeeded, the tool may call into the process at any time.
		if !coreOK {
			tool.Close()
		}
		return nil
	}
	t := &nvtxTool{}
	// A C program names its domain before its first memory call, which is
	// what makes NVTX initialise the extension; the tool sees the same order.
	if create := core2Slots[cbidDomainCreateA]; coreOK && create != 0 {
		t.domain = dl.Call(create, dl.Addr(&domainName[0]))
	}
	if !initMem(extInit) {
		return nil
	}
	for cb := 1; cb < len(t.fns); cb++ {
		if s := memSlots[cb]; s != extFresh && s != extDisabled {
			t.fns[cb] = s
		}
	}
	for _, cb := range []int{cbHeapRegister, cbHeapUnregister, cbRegionsRegister, cbRegionsUnregister} {
		if t.fns[cb] == 0 {
			return nil
		}
	}
	return t
}

// initCore calls the tool's InitializeInjectionNvtx2 with the export
// tables, and reports whether it succeeded; when not, the core slots are
// emptied, as NVTX makes every core function a no-op.
func initCore(init uintptr) bool {
	exportOnce.Do(makeExportTables)
	clear(coreSlots[:])
	clear(core2Slots[:])
	clear(syncSlots[:])
	r := dl.Call(init, getExportTable)
	if int32(r) == 0 {
		clear(coreSlots[:])
		clear(core2Slots[:])
		clear(syncSlots[:])
		return false
	}
	return true
}

// initMem calls the tool's InitializeInjectionNvtxExtension with the
// memory module, and reports whether it succeeded. Afterwards every slot
// the tool left empty, or all of them when it failed, is disabled, as NVTX
// leaves them.
func initMem(init uintptr) bool {
	clear(memSlots[:])
	memSlots[0] = extStarting
	memSegment = extModuleSegment{segmentID: 1, slotCount: memSlotCount, functionSlots: dl.Addr(&memSlots[1])}
	memModule = extModuleInfo{
		nvtxVer:       nvtxVersion,
		structSize:    uint16(dl.Sizeof(memModule)),
		moduleID:      extModuleIDMem,
		compatID:      extCompatIDMem,
		segmentsCount: 1,
		segments:      dl.Addr(&memSegment),
	}
	r := dl.Call(init, dl.Addr(&memModule))
	ok := int32(r) != 0
	for i := 1; i < len(memSlots); i++ {
		if !ok || memSlots[i] == extFresh {
			memSlots[i] = extDisabled
		}
	}
	memSlots[0] = extLoaded
	return ok
}

// heapCall is what nvtxMemHeapRegister reads.
type heapCall struct {
	desc  memHeapDesc
	rng   memVirtualRangeDesc
	cname []byte
}

// heapRegister is nvtxMemHeapRegister of a sub-allocator heap over
// [base, base+size) named name; it returns the tool's handle.
func (t *nvtxTool) heapRegister(base DevicePtr, size uint64, name string) uintptr {
	c := &heapCall{rng: memVirtualRangeDesc{size: uintptr(size), ptr: uintptr(base)}}
	c.desc = memHeapDesc{
		extCompatID:          extCompatIDMem,
		structSize:           uint16(dl.Sizeof(c.desc)),
		usage:                heapUsageSubAllocator,
		typ:                  memTypeVirtualAddress,
		typeSpecificDescSize: dl.Sizeof(c.rng),
		typeSpecificDesc:     dl.Addr(&c.rng),
	}
	if name != "" {
		c.cname = dl.CString(name)
		c.desc.messageType = messageTypeASCII
		c.desc.message = dl.Addr(&c.cname[0])
	}
	h := dl.Call(t.fns[cbHeapRegister], t.domain, dl.Addr(&c.desc))
	runtime.KeepAlive(c)
	return h
}

// heapUnregister is nvtxMemHeapUnregister.
func (t *nvtxTool) heapUnregister(heap uintptr) {
	dl.Call(t.fns[cbHeapUnregister], t.domain, heap)
}

// heapReset is nvtxMemHeapReset, where the tool has it.
func (t *nvtxTool) heapReset(heap uintptr) {
	if t.fns[cbHeapReset] != 0 {
		dl.Call(t.fns[cbHeapReset], t.domain, heap)
	}
}

// regionsCall is what nvtxMemRegionsRegister reads.
type regionsCall struct {
	batch  memRegionsRegisterBatch
	ranges []memVirtualRangeDesc
}

// regionsRegister is nvtxMemRegionsRegister of regions, by address, in
// heap; there must be at least one.
func (t *nvtxTool) regionsRegister(heap uintptr, regions []MemRegion) {
	c := &regionsCall{ranges: make([]memVirtualRangeDesc, len(regions))}
	for i, r := range regions {
		c.ranges[i] = memVirtualRangeDesc{size: uintptr(r.Size), ptr: uintptr(r.Addr)}
	}
	c.batch = memRegionsRegisterBatch{
		extCompatID:           extCompatIDMem,
		structSize:            uint16(dl.Sizeof(c.batch)),
		regionType:            memTypeVirtualAddress,
		heap:                  heap,
		regionCount:           uintptr(len(c.ranges)),
		regionDescElementSize: dl.Sizeof(c.ranges[0]),
		regionDescElements:    dl.Addr(&c.ranges[0]),
	}
	dl.Call(t.fns[cbRegionsRegister], t.domain, dl.Addr(&c.batch))
	runtime.KeepAlive(c)
}

// unregisterCall is what nvtxMemRegionsUnregister reads.
type unregisterCall struct {
	batch memRegionsUnregisterBatch
	refs  []uintptr
}

// regionsUnregister is nvtxMemRegionsUnregister of the regions that start
// at addrs; there must be at least one.
func (t *nvtxTool) regionsUnregister(addrs []DevicePtr) {
	c := &unregisterCall{refs: make([]uintptr, len(addrs))}
	for i, a := range addrs {
		c.refs[i] = uintptr(a)
	}
	c.batch = memRegionsUnregisterBatch{
		extCompatID:    extCompatIDMem,
		structSize:     uint16(dl.Sizeof(c.batch)),
		refType:        regionRefPointer,
		refCount:       uintptr(len(c.refs)),
		refElementSize: dl.Sizeof(c.refs[0]),
		refElements:    dl.Addr(&c.refs[0]),
	}
	dl.Call(t.fns[cbRegionsUnregister], t.domain, dl.Addr(&c.batch))
	runtime.KeepAlive(c)
}

// nameCall is what nvtxMemRegionsName reads.
type nameCall struct {
	batch memRegionsNameBatch
	descs []memRegionNameDesc
	names []byte // every name, each NUL-terminated
}

// regionsName is nvtxMemRegionsName of each region, found by its address,
// where the tool has it; there must be at least one.
func (t *nvtxTool) regionsName(regions []MemRegion) {
	if t.fns[cbRegionsName] == 0 {
		return
	}
	n := 0
	for _, r := range regions {
		n += len(r.Name) + 1
	}
	c := &nameCall{descs: make([]memRegionNameDesc, len(regions)), names: make([]byte, 0, n)}
	for i, r := range regions {
		// The offset of the name for now: names may still move.
		c.descs[i] = memRegionNameDesc{regionRefType: regionRefPointer, nameType: messageTypeASCII, region: uintptr(r.Addr), name: uintptr(len(c.names))}
		c.names = append(append(c.names, r.Name...), 0)
	}
	for i := range c.descs {
		c.descs[i].name += dl.Addr(&c.names[0])
	}
	c.batch = memRegionsNameBatch{
		extCompatID:       extCompatIDMem,
		structSize:        uint16(dl.Sizeof(c.batch)),
		regionCount:       uintptr(len(c.descs)),
		regionElementSize: dl.Sizeof(c.descs[0]),
		regionElements:    dl.Addr(&c.descs[0]),
	}
	dl.Call(t.fns[cbRegionsName], t.domain, dl.Addr(&c.batch))
	runtime.KeepAlive(c)
}
