// Package cudarttest is a fake CUDA runtime for testing code that uses
// cudart, on machines with no GPU, in the manner of net/http/httptest. It
// imports neither testing nor testify, so a program may link it too: a
// program chooses between CUDA and the fake with package choose, which
// makes the fake here. The conformance suite that every cudart.Runtime must
// pass, the fake included, is package conformance.
//
// Tests call NewFakeT (or Open, which gives CUDA where there is a GPU):
// strict by default, it enforces the memory annotations (WithMemcheck;
// WithoutMemcheck opts out) and fails the test at cleanup if anything is
// still allocated, saying which pool's arena or which allocation was never
// freed and the line of the test that made it. NewFake, for programs, does
// neither unless asked.
//
// NewFake returns a *Fake that implements cudart.Full. Device memory lives in
// a synthetic address space (from 0x2000_0000_0000 upward, far from where
// host mmaps and the Go heap live) with real bytes behind it, backed lazily
// in 64 KiB chunks: an 80 GiB fake device costs nothing until written, and
// untouched bytes read as zeros. Pinned host memory is anonymous mmap'd
// memory (MAP_NORESERVE on Linux), so a large host arena is also free until
// touched, and it is real memory a program uses through the []byte that
// MallocHost and HostAlloc return.
//
// The fake is never more lenient than CUDA, and stricter where CUDA's
// behaviour is undefined, so that bugs show up as errors rather than as
// corruption: copies are bounds-checked against the allocation that contains
// them, a guard gap separates allocations, the copy kind must match the
// operands, host-to-host copies must not overlap, addresses are not reused
// until the fake's address space, up to 2^64, has been handed out once (a
// double free fails until then; after, freed ranges are reused, as CUDA
// reuses them, and nothing is granted past 2^64), and virtual memory must be
// made accessible
// before it is read or written. Every error is a *cudart.Error, matched with
// errors.Is against the cudart sentinels; the Call field names the call, its
// arguments in human sizes and, for the fake's own checks, what was wrong.
//
// # The Fake's methods
//
// A Fake answers every method of cudart.Full as CUDA would. Its own methods,
// for the test that drives it, fall in four groups:
//
//   - Fault injection: FailNth, FailCall and FailCallNth fail the next or the
//     nth call, or every call of a CUDA name; FailAsync faults the device at
//     the next work it runs; ClearFaults drops what has not fired.
//   - Inspection: Calls and ResetCalls, the CUDA calls made; Live and
//     CheckLeaks, what is still allocated; HostAllocFlags,
//     HostRegisterFlags and HostRegisterIsLazy, how host memory was pinned;
//     PrefetchedTo, where managed memory was sent; MemHeaps and MemRegions,
//     the memory annotations registered.
//   - Kernels: RegisterKernel, a Go implementation (KernelFunc, which sees a
//     KernelContext) for a PTX entry point.
//   - Devices: fixed at NewFake by its options, WithDevices,
//     WithDeviceMemory, WithGranularity, WithHostMemory, WithPeerAccess,
//     WithMemcheck and WithLongWork.
//
// # Streams and synchronisation
//
// Asynchronous work is queued, per device, and takes effect only at a
// synchronisation point or at a query that says it is done, in stream
// order: a read that neither synchronises nor follows such a query sees
// the bytes from before. Queued are MemcpyAsync (with pinned host
// memory or device memory at both ends), Memset of device memory,
// MemPrefetchAsync, FreeAsync, a device-to-device Memcpy, kernel launches,
// event records and waits and graph launches, all of which CUDA may return
// from before they are done. The work runs at StreamSynchronize (the
// stream's work and what it waits for), EventSynchronize (the event's
// stream), DeviceSynchronize (all of the device's work), and the calls CUDA
// documents as synchronising: Memcpy with a host end, Memset of mapped host or managed
// memory, Free, HostUnregister, and FreeHost (every device). A wait for an
// event (StreamWaitEvent, EventSynchronize) runs the event's stream up to
// its record, not the work queued after it.
//
// Work also progresses without a synchronisation, as a GPU runs it, so that
// a program that polls (StreamQuery, EventQuery) sees its work end: a
// query runs all of the work it asks about, with what that waits for, and
// says done, or runs none of it and says not done, so a result shows only
// once the host has learnt that its work is done. It says not done,
// running nothing, the first time it finds work it has not seen (CUDA may
// answer either right after a launch; the fake answers what a program must
// handle), and while some of the work cannot run yet: a library's piece of
// a collective whose peers have not queued theirs (Work.Ready). The second
// query of the same work runs it. WithLongWork makes work that no query
// finds done, for tests of what a program does while its work runs.
//
// Every stream is a blocking stream: the legacy default stream (0 or
// cudaStreamLegacy) waits for the earlier work of every stream of its
// device, and they wait for its earlier work; a query of it is done once
// all of the device's work is. With pageable host memory MemcpyAsync does
// what CUDA does: it reads a pageable source before it returns, so a later
// change to the source does not reach the device, and it writes a pageable
// destination, after the stream's earlier work, before it returns.
//
// A stream belongs to the device it was created on, whichever device a call
// names: a copy on another device's stream is that device's work and runs
// when that stream or device is synchronised. CUDA allows such a copy, so the
// fake does too.
//
// # Sticky errors and DeviceReset
//
// Queued work is checked again when it runs, as memory may be freed in
// between; if it fails then, it is a fault on the device, as a kernel's
// illegal access is on a GPU: the synchronisation that ran it returns
// cudaErrorIllegalAddress (700), the rest of the device's queue is dropped,
// and every later call on the device returns the same error (the error is
// sticky). FailAsync injects such a fault, with any code CUDA documents as
// fatal to the process (700, 714 to 719), into the next work to run. Only
// DeviceReset clears it; it destroys what the device's context held, as
// cudaDeviceReset does: queued work, device, managed and stream-ordered
// memory, pinned host memory allocated or registered on it, streams,
// events, modules, graphs and their instantiations (every call then refuses
// their handles), and the device's limits and flags. Virtual memory
// (physical memory, mappings, reservations) is the process's and outlives
// the reset, as on a GPU. After a fatal fault the reset succeeds once and
// leaves the device lost, as measured on a GPU: every later call that needs
// its context fails with cudaErrorDevicesUnavailable (46), a second reset
// too; a new Fake, the fake's new process, is the recovery. A reset with no
// fault leaves a working device. Other devices are untouched.
//
// # A test that expects a fault
//
// A test that provokes a sticky fault on purpose (a GEMM or kernel that runs
// past its buffer) checks the error of the synchronisation that ran the
// work (errors.Is(err, cudart.ErrIllegalAddress)), then calls DeviceReset
// on the device. The reset frees what the device held, so NewFakeT's leak
// check passes; each Close of what was made on the device (a pool.Pool or
// pool.Slots, a cublas.Handle) then forgets what it held rather than freeing
// it, and returns an error matching its package's ErrDeviceReset once, nil
// after. Reset first and close after, in one t.Cleanup, since cleanups run
// last-registered first:
//
//	t.Cleanup(func() {
//		if err := rt.DeviceReset(0); err != nil {
//			t.Error(err)
//		}
//		if err := p.Close(); !errors.Is(err, pool.ErrDeviceReset) {
//			t.Errorf("Close after the reset: %v", err)
//		}
//	})
//
// The device stays lost after a fatal fault, as above: what the test does
// after the fault it does on a new fake. See ExampleFake_DeviceReset, and
// pool's ExamplePool_Close_afterDeviceReset.
//
// # Sizes, limits and flags
//
// Device memory is charged as CUDA charges it (measured with
// examples/charge, and held to by the conformance suite): a cudaMalloc of
// up to 2 MiB, rounded up to 512 bytes, shares a 2 MiB chunk with others, a
// new chunk costing MemGetInfo's free memory 2 MiB only when none has room,
// and a chunk comes back when its last allocation is freed; a larger
// allocation takes its own memory in 2 MiB granules, as does managed memory.
// cudaMallocAsync does the same with 32 MiB segments for allocations of up
// to 32 MiB; the fake's pool gives a segment back when its last
// allocation's free runs, whatever the release threshold. A thousand 1-byte cudaMallocs cost one
// chunk. Only the charge is shared: every allocation keeps an address of its
// own, 256-byte aligned, with a guard gap after it. Device-side malloc draws
// on the malloc heap of the kernel's device and costs nothing more; only a
// kernel of that device frees it (cudaFree refuses it with
// cudaErrorInvalidValue).
// Physical memory for virtual memory comes in multiples of the granularity
// (WithGranularity), exportable as a POSIX file descriptor where asked
// (MemCreateExportable, recorded for a library's fake to see), never as a
// Win32 or fabric handle. DeviceSetLimit knows the stack, printf FIFO and malloc
// heap limits; a value that is no cudaLimit is cudaErrorInvalidValue. A
// malloc heap larger than the 8 MiB every context has is device memory,
// charged in whole pages when the limit is set, and refused with
// cudaErrorMemoryAllocation when it does not fit. SetDeviceFlags refuses
// bits CUDA does not define and more than one scheduling policy.
//
// # Pinned host memory and peers
//
// MallocHost, HostAlloc and HostRegister together may pin at most the
// pinning limit (WithHostMemory, 64 GiB by default); beyond it they fail
// with cudaErrorMemoryAllocation. HostRegister refuses
// cudaHostRegisterIoMemory, as the fake has only ordinary memory. No device
// can access another's memory unless WithPeerAccess declares the pair:
// DeviceCanAccessPeer answers from it, and MemSetAccess refuses access for a
// device that cannot, with cudaErrorInvalidDevice. A fake with no device
// (WithDevices(0)) answers DeviceCount with cudaErrorNoDevice, as CUDA does
// on a machine with no GPU.
//
// For tests of failure paths, FailNth, FailCall and FailCallNth inject CUDA
// errors; an injected failure changes nothing. They refuse, with an error, a
// name the fake never calls, listing those it does. FailCall and FailCallNth
// fail the calls of libraries' fakes too, once the library's binding is
// opened on the fake (cublasCreate, cublasGemmEx, ... after cublas.Open),
// with the library's status given as the code. Calls lists the CUDA calls
// made so far, so that a test can count the calls of a lifecycle and then fail
// each in turn. The names are those of the binding's one table of calls: the fake
// makes the calls the binding makes, in the same order, DeviceName's
// cuInit, cuDeviceGet and cuDeviceGetName included. Live and CheckLeaks account for everything still allocated;
// NewFakeT fails the test at cleanup when something is.
//
// Kernels run as Go functions: RegisterKernel gives a PTX entry point its
// implementation, a KernelFunc that sees the launch's shape, its typed
// arguments, the device's memory and a device-side malloc bounded by the
// device's malloc heap limit. ModuleLoadData reads the PTX's header, blocks,
// comments and .entry declarations with the binding's parser, refusing at
// the line what the JIT refuses of them (parameters past the parameter space
// of the PTX version included), but not the instructions; launches are
// checked against them as the binding checks them. While a stream captures, work issued to it is recorded, and a graph
// launch replays it. The graph has a node of CUDA's type for each piece of
// work CUDA makes a node for (kernel launches, async copies and memsets,
// cudaMallocAsync and cudaFreeAsync, graph launches), and none for an event
// record or wait, which CUDA makes an edge; cudart.CountGraphNodes counts
// them. Memory a capture allocates lives while its graph or an
// instantiation does; the capture must free it too, or its end fails with
// cudaErrorNotSupported. Events complete in stream order; EventElapsedTime
// counts FakeEventTick per call made between the two completions.
//
// A library built on CUDA brings its own fake, beside its binding: cuBLAS's
// sits in package cublas, which returns it from cublas.Open on a Fake, so a
// test needs nothing else to run GEMMs on the CPU. The library's fake
// reaches the Fake only through the Library that Attach gives it: it
// queues its work on streams, to run in stream order with checked access
// to device memory, charges the device for its handles, which CheckLeaks
// reports if never freed, and takes the faults FailCall injects by its
// call names. Nothing in this package knows a library.
//
// Memory annotations (cudart.Annotations) are checked by the binding's rules
// always and enforced WithMemcheck (NewFakeT's default): then the fake is the tool, as
// compute-sanitizer is on a GPU, and an access that touches bytes of a
// registered heap no registered region covers fails with
// cudaErrorIllegalAddress, naming the nearest region. Queued work is judged
// by the annotations it was queued under. A heap still registered is a leak
// to CheckLeaks.
//
// conformance.TestRuntime asserts only what real CUDA does, so it passes on
// the fake and on a GPU; the fake's refusals of what CUDA leaves undefined
// are tested in this package's own tests.
//
// # Error codes the fake chooses
//
// Freeing a pointer that is not a live allocation start (never allocated,
// already freed, an interior pointer, or the wrong kind of memory) fails with
// cudaErrorInvalidValue (1), which CUDA 10.1 and later return from cudaFree
// and cudaFreeHost. A copy that runs outside an allocation, or into reserved
// but unmapped virtual memory, fails with cudaErrorInvalidValue; a copy that
// touches mapped virtual memory whose access was never set for the device
// fails with cudaErrorIllegalAddress (700), what a GPU reports when it
// faults. cuMemMap over an already mapped range, cuMemUnmap of part of a
// mapping and cuMemAddressFree of a range that is still mapped fail with
// CUDA_ERROR_INVALID_VALUE (1).
//
// # Caveats
//
// Every method is safe for concurrent use: one mutex guards all of the fake's
// state, and a copy holds it for its whole length, so calls are atomic with
// respect to each other and a large copy blocks the others.
//
// The fake models no concurrency on the device. Queued work runs one piece
// at a time, in issue order, when a synchronisation or a query needs it, so
// a race between two streams never shows: work on a stream that nothing
// orders after another stream's work reads the bytes from before it,
// always. Kernel launches, event records and waits, and graph launches are
// queued like the rest; a wait for an event runs the event's stream up to
// it when the wait runs. StreamCreate takes no flags, so there are no
// non-blocking streams, and cudaStreamPerThread is one stream for the whole
// process, as Go has no thread to tie it to.
//
// The stream-ordered pool keeps nothing: freed memory goes back to the
// device when FreeAsync runs, whatever the release threshold. Managed memory
// does not migrate; MemPrefetchAsync records where it was sent
// (PrefetchedTo). The malloc heap is charged when the limit is set, where
// CUDA charges it when a module that uses it loads.
//
// Errors show at issue where the fake can tell at once, some of which a GPU
// reports only when the work runs: work on virtual memory without access
// fails when issued rather than as a sticky fault. cuMemUnmap,
// cuMemRelease and cuMemAddressFree do not synchronise: work still queued on
// memory they take away faults when it runs. The calls of the virtual memory
// API that name no device (cuMemMap, cuMemUnmap, cuMemRelease,
// cuMemAddressReserve, cuMemAddressFree, cuMemSetAccess) do not return a
// device's sticky error; once a device is lost they fail with
// cudaErrorDevicesUnavailable, as does FreeHost.
//
// Host memory from MallocHost or HostAlloc is unmapped by FreeHost: the slice
// faults on use after, as it would with real CUDA. Memory given to
// HostRegister must stay alive until HostUnregister; the fake keeps a
// reference to it until then.
//
// The fake assumes a 64-bit platform: device addresses start above 2^45.
package cudarttest
