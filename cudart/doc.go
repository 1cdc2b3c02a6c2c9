// Package cudart binds the CUDA runtime (libcudart) and the driver's virtual
// memory calls (libcuda), loaded with dlopen when Open is called, never linked.
//
// A program built with this package runs on machines with no GPU and no CUDA
// toolkit: Open returns an error naming every library path it tried, and the
// rest of cudapool (planning, the fake runtime in cudarttest) works. Building
// needs no CUDA headers: the few declarations the binding uses are written in
// the package.
//
// The pool depends on the small Runtime interface; the other abilities
// (Streams, HostAllocator, HostRegisterer, Managed, AsyncAllocator, Device,
// VirtualMemory) are separate interfaces, found by type assertion, in the
// way database/sql/driver offers optional capabilities.
//
// Failed calls return *Error, which carries the CUDA code, name, message and
// the call; errors.Is matches it against the sentinels (ErrMemoryAllocation,
// ErrInvalidValue, ...).
//
// # Caveats
//
// CUDA's current device is per OS thread and a goroutine can change threads
// between two cgo calls, so every device-dependent method takes the device
// ordinal and selects it inside the same C call.
//
// Device addresses are DevicePtr, an integer, never an unsafe.Pointer: Go must
// not treat them as pointers. Host memory from MallocHost or HostAlloc is an
// unsafe.Pointer; HostSlice views it as a []byte that is valid until the memory
// is freed. Nothing is freed by a finalizer.
package cudart
