package cudart

import (
	"strings"

	"github.com/cudapool/cudapool/internal/enum"
)

// MemcpyKind is cudaMemcpyKind: the direction of a copy.
type MemcpyKind int

// The values of cudaMemcpyKind.
const (
	HostToHost     MemcpyKind = 0
	HostToDevice   MemcpyKind = 1
	DeviceToHost   MemcpyKind = 2
	DeviceToDevice MemcpyKind = 3
	// Default lets CUDA infer the direction from the addresses (unified
	// virtual addressing).
	Default MemcpyKind = 4
)

// String returns the CUDA name of k, e.g. "cudaMemcpyHostToDevice".
func (k MemcpyKind) String() string { return memcpyKinds.Name(k) }

var memcpyKinds = enum.Table[MemcpyKind]{Prefix: "cudaMemcpy", Names: []string{"HostToHost", "HostToDevice", "DeviceToHost", "DeviceToDevice", "Default"}, Unknown: "cudaMemcpyKind(%d)"}

// HostAllocFlags are the flags of cudaHostAlloc. They are orthogonal and
// combine with |.
type HostAllocFlags uint32

// The flags of cudaHostAlloc.
const (
	HostAllocDefault HostAllocFlags = 0
	// HostAllocPortable makes the memory pinned for every CUDA context, not
	// only the one that allocated it.
	HostAllocPortable HostAllocFlags = 1
	// HostAllocMapped maps the memory into the device address space: a kernel
	// can read it in place through HostGetDevicePointer (zero-copy).
	HostAllocMapped HostAllocFlags = 2
	// HostAllocWriteCombined makes the memory write-combined: fast for the
	// device to read over PCIe, very slow for the CPU to read.
	HostAllocWriteCombined HostAllocFlags = 4
)

// String lists the set flags by their CUDA names.
func (f HostAllocFlags) String() string {
	return flagString(uint32(f), "cudaHostAllocDefault", []string{"cudaHostAllocPortable", "cudaHostAllocMapped", "cudaHostAllocWriteCombined"})
}

// HostRegisterFlags are the flags of cudaHostRegister.
type HostRegisterFlags uint32

// The flags of cudaHostRegister.
const (
	HostRegisterDefault  HostRegisterFlags = 0
	HostRegisterPortable HostRegisterFlags = 1
	HostRegisterMapped   HostRegisterFlags = 2
	HostRegisterIoMemory HostRegisterFlags = 4
	HostRegisterReadOnly HostRegisterFlags = 8
)

// String lists the set flags by their CUDA names.
func (f HostRegisterFlags) String() string {
	return flagString(uint32(f), "cudaHostRegisterDefault", []string{"cudaHostRegisterPortable", "cudaHostRegisterMapped", "cudaHostRegisterIoMemory", "cudaHostRegisterReadOnly"})
}

// MemAttachFlags are the flags of cudaMallocManaged.
type MemAttachFlags uint32

// The flags of cudaMallocManaged.
const (
	// MemAttachGlobal makes managed memory accessible from any stream on any device.
	MemAttachGlobal MemAttachFlags = 1
	// MemAttachHost makes managed memory initially accessible from the host only.
	MemAttachHost MemAttachFlags = 2
)

// DeviceFlags are the flags of cudaSetDeviceFlags / cudaGetDeviceFlags.
type DeviceFlags uint32

// DeviceMapHost lets the device map pinned host memory (required before
// HostAllocMapped memory gets a device pointer, on old drivers).
const DeviceMapHost DeviceFlags = 0x08

// Limit is cudaLimit.
type Limit int

// The device limits a pool sets.
const (
	LimitStackSize      Limit = 0
	LimitPrintfFifoSize Limit = 1
	// LimitMallocHeapSize is the size of the heap behind device-side malloc.
	// It must be set before any kernel that uses malloc is launched.
	LimitMallocHeapSize Limit = 2
)

// CPUDevice is cudaCpuDeviceId: the destination of a prefetch to host memory.
const CPUDevice = -1

func flagString(v uint32, zero string, names []string) string {
	if v == 0 {
		return zero
	}
	var parts []string
	for i, n := range names {
		if v&(1<<i) != 0 {
			parts = append(parts, n)
			v &^= 1 << i
		}
	}
	if v != 0 {
		parts = append(parts, "unknown")
	}
	return strings.Join(parts, "|")
}
