// Package pool pre-reserves GPU memory for a program that knows its buffers
// up front.
//
// New takes one device arena (cudaMalloc) and one pinned host arena, once:
// huge-page memory registered with cudaHostRegister by default, or the C++
// pool's cudaMallocHost with WithHostPinning(pinned.MethodHostAlloc).
// WantDevice and WantHost queue requests; Satisfy places them at
// 256-byte-aligned offsets; Commit satisfies and locks the layout;
// ReleaseAll waits for the work that may use the buffers and resets both
// arenas; Close frees them. It is a Go port of the C++
// MY_CUDA_MEMORY_POOL_V1, with the same behaviour, plus the checks a Go user
// expects: typed errors, stale handles refused, nothing leaked on failure.
//
// A request may declare when its buffer is alive with Live(first, last); the
// pool then lets buffers that are never alive together share bytes (package
// plan places them, never below what the lifetimes require at their busiest
// step on the graphs it is tested on).
//
// Beyond the C++ pool: WithGrowableDevice puts the device arena on CUDA
// virtual memory (address space reserved once, memory mapped as Satisfy needs
// it, buffers never moving; WithPeerAccess shares it with other GPUs);
// WithHostPinning and WithHostFlags choose how the host arena is pinned
// (registration of huge-page memory by default, several times faster than
// cudaMallocHost; Mapped for zero-copy access from kernels); WithManagedBytes
// adds a unified-memory arena with Buffer.Prefetch; WithMallocHeap sizes the
// device-side malloc heap.
//
// For serving, NewSlots plans a request's buffers once, for each shape
// profile (Profile), and places them N times in one pool, a slot each with
// a stream of its own, and the buffers every request shares (weights) once.
// Acquire hands a slot out in FIFO order, in O(1); Release gives it back
// without waiting: the slot serves the next request once the work queued
// on its stream has finished, which one query of the stream tells. The
// request path makes no allocation, free or host synchronisation, and no
// CUDA call under the Slots' lock. SlotLayout.Attach gives each slot a
// resource of a library's, opened once on its stream and working in scratch
// memory of its own region: a cuBLAS handle (cublas.Library.ForSlots), so
// that GEMMs allocate nothing and a request's graph holds no memory node.
// The resource is lent to each request as its buffers are (Attached): it
// starts from the slot's settings whatever the last request changed, and
// refuses every call once the request has released the slot. Package pool
// imports no library: a binding implements Attachment and Lender with
// cudart's types alone.
//
// NewMultiSlots puts such slots on several devices, one Slots on each with
// the shared buffers on each, and its Acquire hands out a free slot of any
// device, or waits on all of them at once, FIFO, for the first one freed.
// AcquireGroup hands out slot k of every device at once (a SlotGroup), for
// a request split over the devices: the ranks of a communicator attached
// per slot index. It takes the first index free on every device, reserving
// one while it waits, without holding back the calls that need other
// slots.
//
// Memory bugs inside the arenas are made visible three ways. When a memory
// tool listens (cudart.Annotations: compute-sanitizer through NVTX, or the
// fake WithMemcheck), each arena is a heap and each placed buffer a named
// region, so an access past a buffer or to a released one is reported as for
// a cudaMalloc'd buffer; Step narrows the regions to the buffers alive at a
// step of the plan. A held slot's buffers are regions too, laid out for the
// profile it was acquired with and named after the buffer and the slot ("A
// (slot 0)"), and each attachment's scratch one of its own, so that a GEMM
// or copy that runs from one of a slot's buffers into the next is reported.
// WithGuards follows every buffer of a pool with a canary that Check reads
// back, with no tool at all, and fills dead buffers with poison; NewSlots
// refuses it, as a slot's profiles share its bytes.
//
// # Caveats
//
// A Buffer's address (Ptr) and view (Bytes) are valid from the Satisfy that
// places it until the next ReleaseAll or Close. The pool refuses stale
// handles, but it cannot take back an address already handed out: do not keep
// a pointer or a slice across ReleaseAll.
//
// ReleaseAll waits before it resets, so no kernel still running can write
// into memory that is about to be reused: for the streams given to
// WithStreams and UseStreams where there are any (through events, so two
// pools on one GPU do not stall each other), else for the whole device
// (cudaDeviceSynchronize). Work on a stream the pool was not given, when it
// was given some, and work on other devices are not waited for. Close waits
// the same way, for the pool's device and the devices given
// WithPeerAccess, before it frees, unmaps or unregisters anything; when the
// wait for a stream fails, Close waits for the whole device instead. The
// device work the pool queues itself (guard fills, poison) is waited for on
// its own before memory under it is trimmed, unmapped or freed, even when
// the wait for the caller's streams failed. A stream given with WithStreams
// or UseStreams must stay alive while the pool waits for it: drop it with
// ForgetStreams before destroying it.
//
// A Pool is safe for concurrent use: one mutex guards the arenas and every
// handle's placement. Placement order among goroutines is the order their
// requests took the lock. Options are values applied before the lock is
// taken, and the pool logs only after it lets the lock go, so no caller code
// runs under it; a panic in a runtime call leaves it unlocked.
// Buffer.Placed asks whether a buffer is placed without the lock. A
// goroutine that writes into a buffer while another may release the pool
// holds it with Buffer.Use until Done: ReleaseAll and Close wait for such
// holds (with the lock held, so a holder calls nothing of the pool before
// Done), then for the streams, so its writes and the work it queued come
// before the release.
//
// A Slot's buffers are the request's from Acquire to Release. Release knows
// only the work queued on the slot's stream: work on another stream that
// touches the slot's buffers must be made to finish first (an event the
// slot's stream waits for) or the next request may see it. Close waits for
// every slot's stream, including slots still held, whose Release then
// returns ErrClosed. NewSlots starts one goroutine, which waits on the host
// for released work when a request waits for a slot; Close stops it. A
// goroutine that holds a slot of a MultiSlots and calls its AcquireGroup
// may wait for ever, for the slot it holds.
//
// A failed New frees what it took and puts back the malloc heap size and
// device flags it changed; a failed Close keeps what it could not free and
// the next Close tries again. Nothing is freed by a finalizer: call Close.
//
// A reset of the device (cudaDeviceReset) frees every allocation, pinned
// and registered host memory, stream and event of the device, but not
// virtual memory, which is the process's (a growable arena). A pool made
// before the reset sees it when the reset went through cudart
// (cudart.Device.DeviceResets): every call that would touch its memory
// fails with ErrDeviceReset, and Close forgets what the reset freed, without
// waiting or freeing it again, unmaps and frees the growable arena, returns
// an error matching ErrDeviceReset once and nil after. Slots do the same:
// Acquire and a held Slot's methods fail with ErrDeviceReset, Release
// gives the slot back without asking CUDA, and Close destroys none of the
// streams the reset destroyed. Package pinned has
// forgotten the old host arena, so its addresses may be pinned again.
// Slices and addresses taken from the old pool are invalid; touching a host
// buffer's slice crashes the program, as its memory is unmapped. A reset
// made outside cudart is not seen: Close then fails on what the reset freed.
//
// What comes next depends on why the device was reset, as measured on an
// H100 with CUDA 13.0. After a plain reset the device works: make a new
// pool in the same process. After a sticky fault that CUDA documents as
// fatal to the process (a kernel that wrote to a bad address: every call
// then fails with cudaErrorIllegalAddress; also a launch failure, an
// illegal instruction, a misaligned address, ...), the reset returns
// success but the device is lost for the rest of the process: every CUDA
// call on it, a second reset included, fails with
// cudart.ErrDevicesUnavailable, and so does a new pool. Then Close the pool
// (it can only forget a growable arena, whose memory stays taken, and its
// error matches cudart.ErrDevicesUnavailable too) and restart the process:
// a new process makes a pool with the same options and works.
package pool
