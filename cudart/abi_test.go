package cudart

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestStructLayouts: the Go structs have the sizes and offsets of CUDA's C
// structs on 64-bit Linux (cuda.h, driver_types.h).
func TestStructLayouts(t *testing.T) {
	assert.Equal(t, uintptr(8), unsafe.Sizeof(memLocation{}), "cudaMemLocation")
	assert.Equal(t, uintptr(4), unsafe.Offsetof(memLocation{}.id))

	var p allocProp
	assert.Equal(t, uintptr(32), unsafe.Sizeof(p), "CUmemAllocationProp")
	assert.Equal(t, uintptr(4), unsafe.Offsetof(p.handles), "requestedHandleTypes")
	assert.Equal(t, uintptr(8), unsafe.Offsetof(p.location))

	var d accessDesc
	assert.Equal(t, uintptr(12), unsafe.Sizeof(d), "CUmemAccessDesc")
	assert.Equal(t, uintptr(8), unsafe.Offsetof(d.flags))
	assert.Len(t, sliceMem(make([]accessDesc, 3)).Host(), 36, "descriptors are packed in an array")
}

func TestAllocPropIsPinnedOnDevice(t *testing.T) {
	for _, types := range []HandleType{0, HandleTypePOSIXFileDescriptor} {
		b := structMem(pinnedOn(3, types)).Host()
		want := make([]byte, 32)
		binary.LittleEndian.PutUint32(want[0:], allocationPinned)
		binary.LittleEndian.PutUint32(want[4:], uint32(types))
		binary.LittleEndian.PutUint32(want[8:], locationDevice)
		binary.LittleEndian.PutUint32(want[12:], 3)
		assert.Equal(t, want, b, "handle types %d", types)
	}
}

// TestLocationWord: a cudaMemLocation passed by value is its 8 bytes of
// memory in one register.
func TestLocationWord(t *testing.T) {
	for _, dev := range []int{0, 5, CPUDevice} {
		l := locationOf(dev)
		assert.Equal(t, uint64(l.word()), binary.LittleEndian.Uint64(structMem(&l).Host()), "device %d", dev)
	}
	assert.Equal(t, memLocation{typ: locationHost}, locationOf(CPUDevice))
	assert.Equal(t, memLocation{typ: locationDevice, id: 2}, locationOf(2))
}
