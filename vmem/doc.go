// Package vmem is growable device memory on CUDA's virtual memory API
// (cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess), which takes
// address space and physical memory separately: reserve a large range of
// addresses once, for free, and map physical memory into it as it is needed.
// A buffer grows without the allocate-copy-free of cudaMalloc, and so can
// grow past half the device, since old and new never coexist.
//
// An Arena has a fixed base and a maximum size, reserved at NewArena: Ensure
// maps memory up to a size, Trim gives memory back, and an address handed out
// stays valid while it is mapped. It is the device arena a pool grows.
//
// A Vector is the pattern of NVIDIA's post "Introducing Low-Level GPU Virtual
// Memory Management": Reserve and Grow like a C++ std::vector, but when the
// address space after the vector is taken, the vector moves to a new range by
// mapping its physical memory there again: nothing is copied.
//
// Each growth maps all that is missing with one cuMemCreate, one cuMemMap and
// one cuMemSetAccess (the last covering the owner and every peer given by
// WithPeers): fewer, larger allocations are faster than one per granule. A
// growth that fails half way is undone, so an Arena or Vector is either grown
// or exactly as it was; exceeding an Arena's maximum is an *ExhaustedError,
// matched by errors.Is(err, ErrExhausted).
//
// Code with no GPU uses the fake runtime of cudart/cudarttest, which models
// virtual memory (access must be set before memory is used; memory is freed
// once released and unmapped) and reports leaks.
//
// # Caveats
//
// Vector.Ptr changes when a growth moves the vector: a pointer taken before
// Reserve or Grow is stale after it (it points at address space that is
// freed). Arena.Base never changes, and every address below Mapped stays
// valid until Trim or Close.
//
// A growth that moved a Vector, or undid itself, gives memory and address
// space back to CUDA; where CUDA fails to take it, the cleanup is retried
// before the next growth and at Close, whose error reports it if it fails
// for good.
//
// Arena and Vector are safe for concurrent use: each has one mutex, which
// guards its mapping and is held for the whole of a growth, trim or close.
// Holding it does not order device work: a kernel still using memory that
// Trim or Close unmaps faults, so synchronise first.
//
// A Vector's memory may span several reservations (one per growth that
// extended it in place). CUDA addresses them as one run; each of the
// package's own mapping calls stays within one reservation.
//
// Peer access needs the peers to be able to reach the owner's memory
// (cudaDeviceCanAccessPeer); CUDA refuses the growth otherwise.
//
// A library that shares memory with other devices or processes by its
// physical allocation (NCCL's windows and registrations; see
// WithHandleTypes) sees only the growth that holds an address: the one
// cuMemCreate allocation that cuMemGetAddressRange returns, not the whole
// Arena. NCCL 2.28 maps that allocation alone, so a window or registered
// buffer must lie within one growth: Ensure a window's whole extent in one
// call (or choose WithChunk to hold it), from a size mapped so far that
// starts it at a multiple of 4 KiB.
package vmem
