package cudart

import (
	"time"

	"github.com/cudapool/cudapool/internal/enum"
)

// Runtime is what the pool needs from CUDA: device and pinned host memory,
// copies, memset and synchronisation. The Library from Open implements it
// against real CUDA and cudarttest.Fake against memory in the process.
//
// Every call that depends on CUDA's current device takes the device ordinal
// and selects it inside the same call: a goroutine may move to another OS
// thread between two calls, and the current device is per thread.
type Runtime interface {
	// DeviceCount is cudaGetDeviceCount.
	DeviceCount() (int, error)
	// MemGetInfo is cudaMemGetInfo: free and total bytes of the device.
	MemGetInfo(device int) (free, total uint64, err error)
	// Malloc is cudaMalloc. The memory is 256-byte aligned.
	Malloc(device int, size uint64) (DevicePtr, error)
	// Free is cudaFree.
	Free(device int, p DevicePtr) error
	// MallocHost is cudaMallocHost: size bytes of pinned host memory, valid
	// until FreeHost; nil for size 0.
	MallocHost(device int, size uint64) ([]byte, error)
	// FreeHost is cudaFreeHost of memory from MallocHost or HostAlloc, as
	// they returned it; an empty slice frees nothing.
	FreeHost(b []byte) error
	// Memcpy is cudaMemcpy. dst and src must have the same length.
	Memcpy(device int, dst, src Mem, kind MemcpyKind) error
	// Memset is cudaMemset: n bytes at p set to value.
	Memset(device int, p DevicePtr, value byte, n uint64) error
	// DeviceSynchronize is cudaDeviceSynchronize.
	DeviceSynchronize(device int) error
}

// Stream is a cudaStream_t. The zero Stream is the legacy default stream.
type Stream uintptr

// Streams is the stream API and the asynchronous copy.
type Streams interface {
	// StreamCreate is cudaStreamCreate on device.
	StreamCreate(device int) (Stream, error)
	// StreamSynchronize is cudaStreamSynchronize.
	StreamSynchronize(device int, s Stream) error
	// StreamQuery is cudaStreamQuery: whether the work queued on s has
	// completed, without waiting.
	StreamQuery(device int, s Stream) (bool, error)
	// StreamDestroy is cudaStreamDestroy.
	StreamDestroy(device int, s Stream) error
	// StreamDevice is cudaStreamGetDevice, with device selected: the device
	// s belongs to. The legacy default stream (0), cudaStreamLegacy and
	// cudaStreamPerThread belong to the device selected, device itself.
	// Before CUDA 12.8, which added the call, a Library knows only the
	// streams its StreamCreate made, and says ErrNotSupported of others.
	StreamDevice(device int, s Stream) (int, error)
	// MemcpyAsync is cudaMemcpyAsync on s. Host memory must stay alive and
	// unchanged until the stream is synchronised.
	MemcpyAsync(device int, dst, src Mem, kind MemcpyKind, s Stream) error
	// MemsetAsync is cudaMemsetAsync on s: n bytes at p set to value.
	MemsetAsync(device int, p DevicePtr, value byte, n uint64, s Stream) error
}

// HostAllocator is pinned host memory with flags, mapping into the device
// address space, and the device flags that govern it.
type HostAllocator interface {
	// HostAlloc is cudaHostAlloc: size bytes of pinned host memory, valid
	// until FreeHost; nil for size 0.
	HostAlloc(device int, size uint64, flags HostAllocFlags) ([]byte, error)
	// HostGetDevicePointer is cudaHostGetDevicePointer: the device address of
	// b[0] in mapped host memory (HostAllocMapped or HostRegisterMapped).
	HostGetDevicePointer(device int, b []byte) (DevicePtr, error)
	// GetDeviceFlags is cudaGetDeviceFlags.
	GetDeviceFlags(device int) (DeviceFlags, error)
	// SetDeviceFlags is cudaSetDeviceFlags.
	SetDeviceFlags(device int, flags DeviceFlags) error
}

// HostRegisterer pins memory the caller already has.
type HostRegisterer interface {
	// HostRegister is cudaHostRegister over all of b.
	HostRegister(device int, b []byte, flags HostRegisterFlags) error
	// HostUnregister is cudaHostUnregister of the range starting at b[0].
	HostUnregister(device int, b []byte) error
}

// Managed is unified (managed) memory.
type Managed interface {
	// MallocManaged is cudaMallocManaged.
	MallocManaged(device int, size uint64, flags MemAttachFlags) (DevicePtr, error)
	// MemPrefetchAsync is cudaMemPrefetchAsync to dstDevice (CPUDevice for
	// host memory) on stream s.
	MemPrefetchAsync(device int, p DevicePtr, n uint64, dstDevice int, s Stream) error
}

// AsyncAllocator is stream-ordered allocation from the device's default
// memory pool: the peer every pool benchmark compares against.
type AsyncAllocator interface {
	// MallocAsync is cudaMallocAsync.
	MallocAsync(device int, size uint64, s Stream) (DevicePtr, error)
	// FreeAsync is cudaFreeAsync.
	FreeAsync(device int, p DevicePtr, s Stream) error
	// MemPoolReleaseThreshold reads the default pool's
	// cudaMemPoolAttrReleaseThreshold.
	MemPoolReleaseThreshold(device int) (uint64, error)
	// SetMemPoolReleaseThreshold sets it: bytes the pool keeps reserved across
	// synchronisations instead of returning them to the system.
	SetMemPoolReleaseThreshold(device int, bytes uint64) error
}

// Device is device selection, limits and versions.
type Device interface {
	// SetDevice is cudaSetDevice for the calling OS thread. Prefer passing
	// the ordinal to each call; this exists for code that calls CUDA itself.
	SetDevice(device int) error
	// DeviceGetLimit is cudaDeviceGetLimit.
	DeviceGetLimit(device int, l Limit) (uint64, error)
	// DeviceSetLimit is cudaDeviceSetLimit.
	DeviceSetLimit(device int, l Limit, value uint64) error
	// RuntimeVersion is cudaRuntimeGetVersion, e.g. 13000 for CUDA 13.0.
	RuntimeVersion() (int, error)
	// DriverVersion is cudaDriverGetVersion.
	DriverVersion() (int, error)
	// DeviceName is the device's marketing name, e.g. "NVIDIA H200".
	DeviceName(device int) (string, error)
	// DeviceReset is cudaDeviceReset: it destroys every allocation, stream
	// and setting of device's context in this process and clears a sticky
	// error. Virtual memory (MemCreate, MemMap, MemAddressReserve) is the
	// process's and outlives it. After a fault CUDA documents as fatal (see
	// ErrDevicesUnavailable) it succeeds but leaves the device unusable
	// until the process ends.
	DeviceReset(device int) error
	// DeviceResets is how many times DeviceReset succeeded on device, so
	// that code holding memory from before can tell it is gone: a Library
	// counts the resets made through every Library of the process, as CUDA's
	// state is the process's; a reset made outside this package is not
	// counted.
	DeviceResets(device int) uint64
	// DeviceCanAccessPeer is cudaDeviceCanAccessPeer: whether device can
	// access memory on peer, which MemSetAccess needs to grant it.
	DeviceCanAccessPeer(device, peer int) (bool, error)
	// PointerAttributes is cudaPointerGetAttributes with device selected:
	// what kind of memory p is in (device, pinned or registered host
	// memory at either of its addresses, managed, or unknown to CUDA), the
	// device it belongs to, and its device and host addresses. A host
	// buffer's device alias is host memory.
	PointerAttributes(device int, p DevicePtr) (PointerAttributes, error)
}

// PhysHandle is a CUmemGenericAllocationHandle: physical memory from MemCreate.
type PhysHandle uint64

// HandleType is a set of CUmemAllocationHandleType bits: the kinds of
// shareable handle physical memory can be exported as
// (cuMemExportToShareableHandle), to another process or to a library that
// maps it on other devices, requested when the memory is made
// (CUmemAllocationProp.requestedHandleTypes). NCCL's windows and its
// zero-copy paths between processes need memory exportable as a POSIX file
// descriptor.
type HandleType uint32

// HandleTypePOSIXFileDescriptor is CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR:
// memory exportable as a file descriptor, on Linux. The zero HandleType is
// CU_MEM_HANDLE_TYPE_NONE, memory that cannot be exported, what MemCreate
// makes.
const HandleTypePOSIXFileDescriptor HandleType = 1

// String names the types as cuda.h does, e.g.
// "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"; other sets of bits in hex.
func (t HandleType) String() string { return handleTypes.Name(t) }

var handleTypes = enum.Table[HandleType]{Prefix: "CU_MEM_HANDLE_TYPE_", Names: []string{0: "NONE", HandleTypePOSIXFileDescriptor: "POSIX_FILE_DESCRIPTOR"}, Unknown: "CUmemAllocationHandleType(0x%x)"}

// VirtualMemory is the driver API's virtual memory management: address space
// and physical memory taken separately, mapped together, and made accessible
// per device.
type VirtualMemory interface {
	// MemGetAllocationGranularity is cuMemGetAllocationGranularity for pinned
	// device memory on device; recommended selects the recommended rather
	// than the minimum granularity. Sizes and offsets of the other calls are
	// multiples of it.
	MemGetAllocationGranularity(device int, recommended bool) (uint64, error)
	// MemCreate is cuMemCreate: size bytes of physical memory on device.
	MemCreate(device int, size uint64) (PhysHandle, error)
	// MemGetExportableGranularity is MemGetAllocationGranularity for
	// memory exportable as types (requestedHandleTypes), which may differ
	// from that of memory that is not: MemCreateExportable's sizes are
	// multiples of it.
	MemGetExportableGranularity(device int, types HandleType, recommended bool) (uint64, error)
	// MemCreateExportable is cuMemCreate of size bytes on device,
	// exportable as each of types (requestedHandleTypes); CUDA refuses a
	// type the device or the platform does not support.
	MemCreateExportable(device int, size uint64, types HandleType) (PhysHandle, error)
	// MemRelease is cuMemRelease.
	MemRelease(h PhysHandle) error
	// MemAddressReserve is cuMemAddressReserve. A non-zero hint asks for that
	// address; CUDA may return another, which the caller must check.
	MemAddressReserve(size, alignment uint64, hint DevicePtr) (DevicePtr, error)
	// MemAddressFree is cuMemAddressFree.
	MemAddressFree(p DevicePtr, size uint64) error
	// MemMap is cuMemMap: size bytes of h, from offset, at p.
	MemMap(p DevicePtr, size, offset uint64, h PhysHandle) error
	// MemUnmap is cuMemUnmap.
	MemUnmap(p DevicePtr, size uint64) error
	// MemSetAccess is cuMemSetAccess: read-write access to [p, p+size) for
	// every device listed, in one call.
	MemSetAccess(p DevicePtr, size uint64, devices []int) error
}

// Kernels loads PTX and launches its kernels, through the driver API in the
// device's primary context.
type Kernels interface {
	// ModuleLoadData is cuModuleLoadDataEx of PTX text, with the JIT
	// compiler's error log in the error of PTX that does not compile.
	ModuleLoadData(device int, ptx string) (Module, error)
	// ModuleGetFunction is cuModuleGetFunction: the .entry called name.
	ModuleGetFunction(device int, m Module, name string) (Function, error)
	// ModuleUnload is cuModuleUnload; m's functions are invalid after it.
	ModuleUnload(device int, m Module) error
	// LaunchKernel is cuLaunchKernel of f on s: grid blocks of block
	// threads, sharedMem bytes of dynamic shared memory, and one argument
	// per kernel parameter, of its size.
	LaunchKernel(device int, f Function, grid, block Dim3, sharedMem uint32, s Stream, args ...KernelArg) error
}

// Events are points in a stream's work that streams and the host wait for,
// and time.
type Events interface {
	// EventCreate is cudaEventCreate.
	EventCreate(device int) (Event, error)
	// EventRecord is cudaEventRecord of e on s.
	EventRecord(device int, e Event, s Stream) error
	// StreamWaitEvent is cudaStreamWaitEvent: later work on s waits for e.
	StreamWaitEvent(device int, s Stream, e Event) error
	// EventSynchronize is cudaEventSynchronize: the host waits for e.
	EventSynchronize(device int, e Event) error
	// EventQuery is cudaEventQuery: whether e has completed.
	EventQuery(device int, e Event) (bool, error)
	// EventElapsedTime is cudaEventElapsedTime between two completed events.
	EventElapsedTime(device int, start, end Event) (time.Duration, error)
	// EventDestroy is cudaEventDestroy.
	EventDestroy(device int, e Event) error
}

// Graphs are stream capture into a CUDA graph, its replay, and the
// inspection of its nodes.
type Graphs interface {
	// StreamBeginCapture is cudaStreamBeginCapture: work on s is recorded,
	// not run.
	StreamBeginCapture(device int, s Stream, mode CaptureMode) error
	// StreamEndCapture is cudaStreamEndCapture: the graph recorded.
	StreamEndCapture(device int, s Stream) (Graph, error)
	// GraphInstantiate is cudaGraphInstantiate.
	GraphInstantiate(device int, g Graph) (GraphExec, error)
	// GraphLaunch is cudaGraphLaunch: the recorded work runs on s.
	GraphLaunch(device int, x GraphExec, s Stream) error
	// GraphExecDestroy is cudaGraphExecDestroy.
	GraphExecDestroy(device int, x GraphExec) error
	// GraphDestroy is cudaGraphDestroy.
	GraphDestroy(device int, g Graph) error
	// GraphNodes is cudaGraphGetNodes: the nodes of g. CountGraphNodes
	// counts them by type.
	GraphNodes(device int, g Graph) ([]GraphNode, error)
	// GraphNodeType is cudaGraphNodeGetType.
	GraphNodeType(device int, n GraphNode) (GraphNodeType, error)
}

// Full is every ability: what the Library from Open and cudarttest.Fake both provide.
type Full interface {
	Runtime
	Streams
	HostAllocator
	HostRegisterer
	Managed
	AsyncAllocator
	Device
	VirtualMemory
	Kernels
	Events
	Graphs
	Annotations
}
