package cudart

import "github.com/cudapool/cudapool/internal/enum"

// MemoryType is cudaMemoryType: what kind of memory an address is in, as
// cudaPointerGetAttributes tells it.
type MemoryType int32

// The values of cudaMemoryType (CUDA 11 and later).
const (
	// MemoryUnregistered is host memory CUDA does not know: pageable memory
	// never registered, and any address CUDA did not hand out or has freed.
	MemoryUnregistered MemoryType = 0
	// MemoryHost is pinned or registered host memory (MallocHost, HostAlloc,
	// HostRegister), asked at its host address or at its device alias.
	MemoryHost MemoryType = 1
	// MemoryDevice is device memory: Malloc, MallocAsync, and virtual
	// memory mapped to a device (MemMap).
	MemoryDevice MemoryType = 2
	// MemoryManaged is managed memory (MallocManaged), which CUDA may move
	// between the host and the devices.
	MemoryManaged MemoryType = 3
)

// String is the CUDA name of t, e.g. "cudaMemoryTypeDevice".
func (t MemoryType) String() string { return memoryTypes.Name(t) }

var memoryTypes = enum.Table[MemoryType]{Prefix: "cudaMemoryType", Names: []string{"Unregistered", "Host", "Device", "Managed"}, Unknown: "cudaMemoryType(%d)"}

// PointerAttributes is cudaPointerAttributes: what CUDA knows of an address.
type PointerAttributes struct {
	// Type is the kind of memory the address is in.
	Type MemoryType
	// Device is, for device memory, the device it is on; for host memory,
	// the device that was selected when it was pinned or registered.
	Device int
	// DevicePointer is the address through which the selected device
	// reaches the memory (a mapped host buffer's device alias); 0 where it
	// cannot reach it.
	DevicePointer DevicePtr
	// HostPointer is the address through which the host reaches the
	// memory; 0 where it cannot. It is an integer, as DevicePtr is: never
	// a Go pointer.
	HostPointer uintptr
}
