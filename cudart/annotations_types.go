package cudart

import (
	"fmt"
	"reflect"
)

// MemHeap is a heap registered with MemHeapRegister. Zero is never a heap.
type MemHeap uintptr

// MemRegion is one buffer inside a registered heap: Size bytes from Addr.
// Name, when not empty, is what tools call it.
type MemRegion struct {
	Addr DevicePtr
	Size uint64
	Name string
}

// String describes r for error messages.
func (r MemRegion) String() string {
	if r.Name == "" {
		return fmt.Sprintf("[%s, +%d)", r.Addr, r.Size)
	}
	return fmt.Sprintf("%q [%s, +%d)", r.Name, r.Addr, r.Size)
}

// Annotations tells memory tools how a sub-allocator carves its memory: the
// memory API of NVTX (nvToolsExtMem.h). Inside a registered heap, a tool
// such as compute-sanitizer treats every byte no registered region covers as
// unallocated, so an access past a buffer's end or to a buffer that was
// unregistered is reported as if the buffer had come from cudaMalloc.
//
// Host memory is registered at its address, HostPtr.
//
// Every method checks its arguments the same way whether or not a tool
// listens: a heap must not overlap another, a region must lie inside its heap
// and not start where a registered region of the heap starts, and handles
// must be live. Regions may overlap, as buffers that share memory at
// different times do. Misuse is an error wrapping ErrInvalidValue.
//
// A heap belongs to a device, and every call about it is made with that
// device's context current on the calling OS thread, as a tool needs to
// place the memory: the methods may be called from any goroutine, in any
// order with the program's other CUDA calls. A device that cannot be
// selected is an error wrapping ErrInvalidDevice.
type Annotations interface {
	// AnnotationsEnabled reports whether anything receives the
	// annotations of device's memory: a tool attached through NVTX, or the
	// fake. When false, the methods only check their arguments and the
	// caller may skip them.
	AnnotationsEnabled(device int) bool
	// MemHeapRegister is nvtxMemHeapRegister of a sub-allocator heap over
	// [base, base+size) of device's memory (pinned host memory allocated
	// or registered on device, for a host heap), named name.
	MemHeapRegister(device int, base DevicePtr, size uint64, name string) (MemHeap, error)
	// MemHeapUnregister is nvtxMemHeapUnregister: h and its regions are
	// forgotten.
	MemHeapUnregister(h MemHeap) error
	// MemHeapReset is nvtxMemHeapReset: every region of h is unregistered.
	MemHeapReset(h MemHeap) error
	// MemRegionsRegister is nvtxMemRegionsRegister of regions in h, then
	// nvtxMemRegionsName of those that have a Name. On error none is
	// registered.
	MemRegionsRegister(h MemHeap, regions []MemRegion) error
	// MemRegionsUnregister is nvtxMemRegionsUnregister of the regions of h
	// that start at addrs. On error none is unregistered.
	MemRegionsUnregister(h MemHeap, addrs []DevicePtr) error
	// MemRegionsName is nvtxMemRegionsName: the regions of h that start at
	// each region's Addr are renamed to its Name.
	MemRegionsName(h MemHeap, regions []MemRegion) error
}

// HostPtr is the address of b's first byte, as CUDA's unified addressing
// names pinned host memory; 0 for a slice with no memory.
func HostPtr(b []byte) DevicePtr { return DevicePtr(reflect.ValueOf(b).Pointer()) }
