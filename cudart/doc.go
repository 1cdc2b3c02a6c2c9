// Package cudart binds the CUDA runtime (libcudart) and the driver's virtual
// memory calls (libcuda), loaded with dlopen when Open is called, never linked,
// and called through github.com/ebitengine/purego, so that a CGO_ENABLED=0
// build runs real CUDA.
//
// A program built with this package runs on machines with no GPU and no CUDA
// toolkit: Open returns an error naming every library path it tried, and the
// rest of cudapool (planning, the fake runtime in cudarttest) works. Building
// needs no CUDA headers and no C compiler.
//
// Every CUDA function the binding calls is one row of one table
// (cudart/internal/calls): its name, library, capability, the methods that
// make it, whether it needs the current device, its C parameters and result.
// Open looks up each row, the methods name their row in errors, and
// cudarttest's fake logs and fails calls by the same rows.
//
// The pool depends on the small Runtime interface; the other abilities
// (Streams, HostAllocator, HostRegisterer, Managed, AsyncAllocator, Device,
// VirtualMemory, Kernels, Events, Graphs, Annotations) are separate
// interfaces, found by type assertion, in the way database/sql/driver offers
// optional capabilities.
//
// Kernels are PTX text loaded through the driver API (ModuleLoadData) into
// the device's primary context, which the runtime's device selection makes
// current. The binding reads each module's .entry declarations,
// so that a launch of an unknown kernel, with the wrong number or sizes of
// arguments (KernelArg), on a destroyed stream or from an unloaded module is
// an error naming the kernel before CUDA sees it, rather than undefined
// behaviour on the GPU.
//
// Failed calls return *Error, which carries the CUDA code, name, message and
// the call; errors.Is matches it against the sentinels (ErrMemoryAllocation,
// ErrInvalidValue, ...).
//
// # Annotations for memory tools
//
// A pool hands out pieces of a few large cudaMalloc allocations, so a tool
// that sees only cudaMalloc cannot tell one buffer from the next. the Library's
// Annotations methods tell it, through the memory API of NVTX. Tools such as
// compute-sanitizer and Nsight Systems set NVTX_INJECTION64_PATH in the
// program's environment to an injection library of theirs; on its first
// annotation, the binding reads that variable once for the process, loads
// the library and attaches it the way NVTX's C code does (the core export
// tables, then the memory extension, in a "cudapool" domain), so no NVTX
// header or C compiler is needed. Under compute-sanitizer's memcheck, an
// access past a registered buffer, or to one unregistered, is then reported
// as it would be for a cudaMalloc of its own. The sanitizer refuses an
// annotation made on an OS thread where no CUDA context is current ("The
// object is not ready"), and a goroutine may be on such a thread whatever
// CUDA calls it made before, so every annotation names its device, directly
// (MemHeapRegister) or through its heap, and is made on a locked OS thread
// with that device selected: annotations hold in any order of calls and from
// any goroutine. Without the variable nothing is loaded: the methods only
// check their arguments (about 0.1 µs to register and unregister a buffer,
// BenchmarkAnnotationsOff) and allocate nothing; AnnotationsEnabled says
// which it is.
//
// # Caveats
//
// CUDA's current device is per OS thread and a goroutine can change threads
// between two calls, so every device-dependent method, and every annotation,
// takes the device ordinal (an annotation through its heap) and, with its
// OS thread locked, selects it and makes the call.
//
// Device addresses are DevicePtr, an integer, never an unsafe.Pointer: Go must
// not treat them as pointers. Host memory from MallocHost or HostAlloc is a
// []byte over memory CUDA owns, valid until FreeHost; using it after is a
// fault. Nothing is freed by a finalizer.
//
// A stream capture in CaptureModeGlobal or CaptureModeThreadLocal must end
// on the OS thread that began it: lock the goroutine to its thread
// (runtime.LockOSThread) from StreamBeginCapture to StreamEndCapture, or use
// CaptureModeRelaxed.
package cudart
