// Package cudarttest is a fake CUDA runtime for testing code that uses
// cudart, on machines with no GPU, in the manner of net/http/httptest. It
// imports neither testing nor testify, so a program may link it too; the
// conformance suite that every cudart.Runtime must pass, the fake included,
// is package conformance.
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
// The fake is stricter than CUDA where CUDA's behaviour is undefined, so that
// bugs show up as errors rather than as corruption: copies are bounds-checked
// against the allocation that contains them, a guard gap separates
// allocations, the copy kind must match the operands, addresses are never
// reused (a double free always fails), and virtual memory must be made
// accessible before it is read or written. Every error is a *cudart.Error,
// matched with errors.Is against the cudart sentinels; the Call field names
// the call, its arguments in human sizes and, for the fake's own checks, what
// was wrong.
//
// For tests of failure paths, FailNth, FailCall and FailCallNth inject CUDA
// errors; an injected failure changes nothing. They refuse, with an error, a
// name the fake never calls, listing those it does. Calls lists the CUDA calls
// made so far, so that a test can count the calls of a lifecycle and then fail
// each in turn. The names are those of cudart's table (cudart.Calls): the fake
// makes the calls the binding makes, in the same order, DeviceName's
// cuInit, cuDeviceGet and cuDeviceGetName included. Live and CheckLeaks account for everything still allocated;
// NewFakeT fails the test at cleanup when something is.
//
// Kernels run as Go functions: RegisterKernel gives a PTX entry point its
// implementation, a KernelFunc that sees the launch's shape, its typed
// arguments, the device's memory and a device-side malloc bounded by the
// device's malloc heap limit. ModuleLoadData reads the PTX's .entry
// declarations, and launches are checked against them as the binding checks
// them. While a stream captures, work issued to it is recorded, and a graph
// launch replays it. Events complete in stream order; EventElapsedTime
// counts FakeEventTick per call made between the two completions.
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
// Asynchronous calls (MemcpyAsync, MallocAsync, FreeAsync, MemPrefetchAsync)
// complete before they return; synchronisation is checked for valid
// arguments and does nothing else. A test therefore cannot observe a missing
// synchronisation on the fake.
//
// Host memory from MallocHost or HostAlloc is unmapped by FreeHost: the slice
// faults on use after, as it would with real CUDA. Memory given to
// HostRegister must stay alive until HostUnregister; the fake keeps a
// reference to it until then.
//
// The fake assumes a 64-bit platform: device addresses start above 2^45.
package cudarttest
