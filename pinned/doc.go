// Package pinned allocates pinned (page-locked) host memory fast, and pins
// memory the caller already has.
//
// Copies between the GPU and pinned memory run by DMA straight from and to
// its pages; ordinary (pageable) memory is staged through a driver buffer
// first. On an H200 host, 1 GiB host-to-device copies ran at 55.5 GB/s from
// cudaMallocHost memory against 6.5 GB/s from a Go slice. But cudaMallocHost
// pins slowly: 4 GiB took 1.64 s there, from one thread.
//
// Alloc's default method, MethodRegister, maps anonymous memory with mmap,
// asks for transparent huge pages, touches every page from GOMAXPROCS
// goroutines (WithWorkers), then pins the range with cudaHostRegister, in
// chunks of at most 256 GiB since recent drivers refuse one call of 512 GiB.
// Measured on that host (examples/bandwidth, median of 5), this readied
// 4 GiB in 211 ms and freed it in 108 ms, and copied at 98.7% (to the device)
// and 99.6% (from it) of cudaMallocHost memory's bandwidth.
// A runtime that registers without resident pages (LazyRegisterer, as
// cudarttest's fake) is spared the touch, so its memory is backed only when
// used.
// MethodRegisterNoHugePages does the same in 4 KiB pages, and
// MethodHostAlloc is cudaHostAlloc (or cudaMallocHost). A registering method
// falls back to MethodHostAlloc where registration is impossible or refused
// (see WithFallback), and Region.Method says which method was used.
//
// Flags are cudaHostAlloc's: Portable, Mapped (DevicePtr gives a device
// address, so that a kernel can read the memory in place) and
// WriteCombined (fast for the device to read, slow for the CPU to read).
// cudaHostRegister has no write-combined flag, so WriteCombined makes Alloc
// use MethodHostAlloc, and Register refuses it with ErrUnsupported.
//
// Register pins a []byte the caller already has, and Unregister unpins it.
// The package tracks every range it has pinned and refuses an overlapping
// one with ErrAlreadyRegistered before calling CUDA.
//
// Errors wrap sentinels (ErrAlreadyRegistered, ErrNotRegistered,
// ErrUnsupported, ...) to match with errors.Is, and *cudart.Error for what
// CUDA said. A failed Alloc or Register leaves nothing pinned or mapped:
// chunks already registered are unregistered and the mapping unmapped.
//
// # Caveats
//
// A registered region larger than one chunk (256 GiB) is several
// registrations: one CUDA call on it must stay within a chunk. On an H200
// with CUDA 13, a copy whose host range spans two registrations fails with
// cudaErrorInvalidValue, through the host address and, for a mapped region,
// through its one contiguous device address alike.
//
// Bytes is valid until Free. Free unmaps the memory: a slice kept from
// before and used after Free crashes the program, as with any unmapped
// memory. Nothing is freed by a finalizer: a Region dropped without Free
// stays pinned until the process exits.
//
// Registered memory must stay mapped until Unregister: unregister before
// munmap, before freeing C memory, before closing the file an mmap maps.
// Go's garbage collector does not move heap objects, so a Go slice's
// address stays put, and a slice passed to Register escapes to the heap.
// What could go wrong is the slice being collected while pinned: Register
// keeps a reference to it until Unregister, so a Registration dropped
// without Unregister keeps its memory alive and pinned rather than leaving
// CUDA with freed memory.
//
// Region and Registration are safe for concurrent use; the bytes are not
// synchronised, and copies that read or write them must finish before Free
// or Unregister. Pinning is process-wide in CUDA, and so is the package's
// record of pinned ranges, whichever runtime pinned them.
//
// A reset of the device (cudaDeviceReset through cudart, which counts it)
// unpins everything pinned on it and frees cudaHostAlloc's memory: Free and
// Unregister then call no CUDA and forget the memory, and the package's
// record no longer refuses pinning those addresses again, on any runtime. A
// reset made outside cudart is not seen; a cudaHostUnregister that says
// cudaErrorHostMemoryNotRegistered is then taken as unpinned all the same,
// and reported.
//
// Pinned memory cannot be paged out: pinning much of a host's memory
// starves the rest of the system.
package pinned
