package cudart

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestNVTXLayouts: the Go structs have the sizes and offsets of NVTX's C
// structs on 64-bit platforms (nvtxTypes.h, nvtxExtTypes.h,
// nvToolsExtMem.h). fakenvtx.c reads them through its own declarations.
func TestNVTXLayouts(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the offsets are those of a 64-bit platform")
	}
	type field struct {
		name   string
		offset uintptr
		want   uintptr
	}
	cases := []struct {
		name   string
		size   uintptr
		want   uintptr
		fields []field
	}{
		{"NvtxExportTableCallbacks", unsafe.Sizeof(exportCallbacks{}), 16, []field{
			{"GetModuleFunctionTable", unsafe.Offsetof(exportCallbacks{}.getModuleFunctionTable), 8},
		}},
		{"NvtxExportTableVersionInfo", unsafe.Sizeof(exportVersionInfo{}), 24, []field{
			{"version", unsafe.Offsetof(exportVersionInfo{}.version), 8},
			{"SetInjectionNvtxVersion", unsafe.Offsetof(exportVersionInfo{}.setInjectionNvtxVersion), 16},
		}},
		{"nvtxExtModuleSegment_t", unsafe.Sizeof(extModuleSegment{}), 24, []field{
			{"slotCount", unsafe.Offsetof(extModuleSegment{}.slotCount), 8},
			{"functionSlots", unsafe.Offsetof(extModuleSegment{}.functionSlots), 16},
		}},
		{"nvtxExtModuleInfo_t", unsafe.Sizeof(extModuleInfo{}), 40, []field{
			{"structSize", unsafe.Offsetof(extModuleInfo{}.structSize), 2},
			{"moduleId", unsafe.Offsetof(extModuleInfo{}.moduleID), 4},
			{"compatId", unsafe.Offsetof(extModuleInfo{}.compatID), 6},
			{"segmentsCount", unsafe.Offsetof(extModuleInfo{}.segmentsCount), 8},
			{"segments", unsafe.Offsetof(extModuleInfo{}.segments), 16},
			{"getExportFunction", unsafe.Offsetof(extModuleInfo{}.getExportFunction), 24},
			{"extInfo", unsafe.Offsetof(extModuleInfo{}.extInfo), 32},
		}},
		{"nvtxMemVirtualRangeDesc_t", unsafe.Sizeof(memVirtualRangeDesc{}), 16, []field{
			{"size", unsafe.Offsetof(memVirtualRangeDesc{}.size), 0},
			{"ptr", unsafe.Offsetof(memVirtualRangeDesc{}.ptr), 8},
		}},
		{"nvtxMemHeapDesc_t", unsafe.Sizeof(memHeapDesc{}), 48, []field{
			{"structSize", unsafe.Offsetof(memHeapDesc{}.structSize), 2},
			{"usage", unsafe.Offsetof(memHeapDesc{}.usage), 8},
			{"type", unsafe.Offsetof(memHeapDesc{}.typ), 12},
			{"typeSpecificDescSize", unsafe.Offsetof(memHeapDesc{}.typeSpecificDescSize), 16},
			{"typeSpecificDesc", unsafe.Offsetof(memHeapDesc{}.typeSpecificDesc), 24},
			{"category", unsafe.Offsetof(memHeapDesc{}.category), 32},
			{"messageType", unsafe.Offsetof(memHeapDesc{}.messageType), 36},
			{"message", unsafe.Offsetof(memHeapDesc{}.message), 40},
		}},
		{"nvtxMemRegionsRegisterBatch_t", unsafe.Sizeof(memRegionsRegisterBatch{}), 48, []field{
			{"regionType", unsafe.Offsetof(memRegionsRegisterBatch{}.regionType), 4},
			{"heap", unsafe.Offsetof(memRegionsRegisterBatch{}.heap), 8},
			{"regionCount", unsafe.Offsetof(memRegionsRegisterBatch{}.regionCount), 16},
			{"regionDescElementSize", unsafe.Offsetof(memRegionsRegisterBatch{}.regionDescElementSize), 24},
			{"regionDescElements", unsafe.Offsetof(memRegionsRegisterBatch{}.regionDescElements), 32},
			{"regionHandleElementsOut", unsafe.Offsetof(memRegionsRegisterBatch{}.regionHandleElementsOut), 40},
		}},
		{"nvtxMemRegionsUnregisterBatch_t", unsafe.Sizeof(memRegionsUnregisterBatch{}), 32, []field{
			{"refType", unsafe.Offsetof(memRegionsUnregisterBatch{}.refType), 4},
			{"refCount", unsafe.Offsetof(memRegionsUnregisterBatch{}.refCount), 8},
			{"refElementSize", unsafe.Offsetof(memRegionsUnregisterBatch{}.refElementSize), 16},
			{"refElements", unsafe.Offsetof(memRegionsUnregisterBatch{}.refElements), 24},
		}},
		{"nvtxMemRegionNameDesc_t", unsafe.Sizeof(memRegionNameDesc{}), 32, []field{
			{"nameType", unsafe.Offsetof(memRegionNameDesc{}.nameType), 4},
			{"region", unsafe.Offsetof(memRegionNameDesc{}.region), 8},
			{"name", unsafe.Offsetof(memRegionNameDesc{}.name), 16},
			{"category", unsafe.Offsetof(memRegionNameDesc{}.category), 24},
		}},
		{"nvtxMemRegionsNameBatch_t", unsafe.Sizeof(memRegionsNameBatch{}), 40, []field{
			{"regionCount", unsafe.Offsetof(memRegionsNameBatch{}.regionCount), 8},
			{"regionElementSize", unsafe.Offsetof(memRegionsNameBatch{}.regionElementSize), 16},
			{"regionElements", unsafe.Offsetof(memRegionsNameBatch{}.regionElements), 24},
		}},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.size, "sizeof(%s)", c.name)
		for _, f := range c.fields {
			assert.Equal(t, f.want, f.offset, "offsetof(%s, %s)", c.name, f.name)
		}
	}
	assert.Len(t, memSlots, 64, "the module state and 63 function slots")
	assert.Len(t, core2Table, 17, "16 entries and a NULL")
}
