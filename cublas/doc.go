// Package cublas runs cuBLAS on pool memory: handles bound to one device and
// one stream, working in a workspace the caller gives from the pool, and
// GEMMs in FP32, FP16 and BF16 with FP32 accumulation.
//
// Open loads libcublas at run time (13, then 12) through purego, as package
// cudart loads the CUDA runtime: no cgo, no CUDA headers, and a "not found"
// error that lists every path tried. On the fake runtime of cudarttest, or a
// runtime that wraps it and says so with Unwrap (cudart.As), Open returns the
// fake's cuBLAS, which computes the same calls on the CPU and loads no
// library, so a test written once runs on the fake and on a GPU. The fake's
// cuBLAS sits beside the binding (cublas/internal/fakeblas), reaching the
// fake runtime through cudarttest's Library hook, so that nothing under
// cudart knows cuBLAS; the test needs nothing but this package and the
// fake:
//
//	blas, err := cublas.Open(rt) // rt: cudart.Open(), the fake, or one chosen
//	h, err := blas.NewHandle(0, stream)
//	err = h.SetWorkspace(ws)     // a *pool.Buffer of 32 MiB, say
//	err = h.Gemm(cublas.Gemm{M: m, N: n, K: k, Alpha: 1, A: a, B: b, C: c})
//
// # The handle's stream
//
// A handle's stream is a stream of its device made by the runtime cublas.Open
// was given: in a program, the one choose.Open returned. The pool waits only
// for the streams it is told of (pool.WithStreams, UseStreams), so that
// ReleaseAll and Close wait for the GEMMs queued there; the handle goes
// first, then the pool forgets the stream, then the stream goes
// (ExampleLibrary_NewHandle):
//
//	s, err := rt.StreamCreate(0)
//	h, err := blas.NewHandle(0, s)
//	err = p.UseStreams(s)
//	...
//	err = h.Close()           // cublasDestroy synchronises the device
//	err = p.ForgetStreams(s)  // before the stream goes; nil after p.Close
//	err = rt.StreamDestroy(0, s)
//
// Stream 0, the legacy default stream, needs none of this but serialises
// the handle's GEMMs with every other stream's work. The pool's Slots make
// each slot's stream and handle themselves (Library.ForSlots).
//
// # Memory cuBLAS takes behind the caller
//
// cuBLAS allocates device memory that no pool sees. Measured on an H100 with
// cuBLAS 13.1: each handle takes 64 MiB (HandleCharge) from cublasCreate to
// cublasDestroy, and the device's first live handle 2 MiB more. Size the
// pool's arenas around it: a pool of "all free memory" leaves none for the
// handles, and NewHandle fails with ErrAllocFailed, saying so. The fake
// charges the same. pool.NewSlots counts HandleCharge for each slot of a
// ForSlots attachment before it takes anything.
//
// Without a workspace, cuBLAS allocates one itself, from the device's default
// memory pool on the handle's stream, and a graph captured from the stream
// records that allocation as memory-allocation and memory-free nodes; its
// replays take more device memory. With SetWorkspace, cuBLAS works in the
// caller's memory only: a graph of GEMMs holds kernel nodes and nothing else,
// and replays take 0 B more (asserted by the conformance suite on CUDA and
// on the fake). Give each handle its own workspace; the pool's Slots do.
//
// # Precision
//
// TF32 is off: a new handle is in MathDefault, where FP32 GEMMs compute in
// FP32. SetMathMode(MathTF32) allows TF32 tensor cores, which round FP32
// inputs to a 10-bit mantissa. (cuBLAS also turns TF32 on when the process
// runs with NVIDIA_TF32_OVERRIDE=1; the fake does not read the variable.)
//
// The fake computes each element in float64, in a fixed order, and rounds it
// once to C's type, so its results are deterministic. CUDA's differ from
// them, and from the exact result, by at most
//
//	(K+2)·2⁻²³·S + u·|c|
//
// where S is the sum over the K products of |α·a·b| plus |β·c_old|, c the
// exact value and u the unit roundoff of C's type (2⁻²⁴ for FP32, 2⁻¹¹ for
// FP16, 2⁻⁸ for BF16); with MathTF32, 2·2⁻¹¹·S more. The conformance
// suite's BLAS group holds CUDA and the fake to this bound, for every type
// pair, transposition and batching.
//
// # Errors
//
// A cuBLAS status other than success is a *Error with cuBLAS's name and
// message, matched with errors.Is against ErrInvalidValue, ErrNotSupported
// and the other sentinels. The binding refuses, before cuBLAS sees them and
// naming the argument, a GEMM's arguments cuBLAS would refuse, with the
// status cuBLAS returns for them (ErrInvalidValue for a leading dimension
// or a size, ErrNotSupported for types), and those that would make cuBLAS
// read or write memory at address 0, or whose sizes do not fit its int,
// with ErrInvalidValue. A GEMM whose operands run past their memory is
// queued, as cuBLAS queues it, and faults when it runs (see Handle.Gemm).
// NewHandle on a device the runtime does not have fails with the runtime's
// error (cudart.ErrInvalidDevice); calls on a closed
// handle with ErrClosed; an unusable workspace (released, too small, on
// another device, at address 0, or not device memory) with
// ErrInvalidWorkspace; a stream of
// another device than the handle's with ErrInvalidStream, at NewHandle and
// SetStream. The stream's device is the runtime's answer
// (cudart.Streams.StreamDevice): a runtime older than CUDA 12.8 knows it
// only for the streams its StreamCreate made, and a stream made elsewhere
// is taken unchecked there. What memory a workspace is in is CUDA's answer
// too (cudart.Device.PointerAttributes, cudaPointerGetAttributes): host
// memory however it is reached (a mapped host arena's buffer, whose Ptr is
// its device alias) and managed memory are refused, as is an address CUDA
// does not know. It is asked whenever a workspace is set, never before a
// GEMM; only a runtime that cannot select devices (cudart.Device), which
// the fake may be wrapped in, cannot say, and its workspaces are taken
// unchecked. A setter that fails changes nothing, in cuBLAS or in the
// Handle.
//
// # Adding a cuBLAS call
//
// A new call touches three files: its row in the table of internal/blas
// (calls.go: its C name and how a frame becomes its arguments), the method
// here that fills the frame and turns the status into an error, and the
// fake's case in internal/fakeblas/fakeblas.go. Its assertion goes in the
// conformance suite's cuBLAS groups, in cublas/conformance (blas.go).
//
// # Lending a handle
//
// An owner may lend its handle (Lend) to a series of leases, as the pool's
// slots lend theirs to requests: each lease (a Lent) starts from the owner's
// stream, workspace and math mode, whatever the lease before it changed, and
// refuses every call once its Guard says it has ended. A lease stays on the
// owner's stream, the one the lender waits for.
//
// Library.ForSlots gives every slot of a pool's Slots a handle on the slot's
// stream, working in a workspace of the slot's region: it is a
// pool.Attachment, and a request takes its slot's handle lent with
// pool.Attached[cublas.Lent]. This package does not import pool: the
// attachment is made of cudart's types and the standard library's.
//
//	layout := pool.SlotLayout{Profiles: profiles, Attach: []pool.Attachment{blas.ForSlots(0)}}
//	...
//	h, err := pool.Attached[cublas.Lent](slot) // the request's from Acquire to Release
//
// # Caveats
//
// A Lent used while its lease ends (a request's GEMM racing its own
// Release) may queue that one call after the lender stopped waiting: end a
// lease only once its calls have returned, as with the slot's buffers.
//
// A Handle serialises its calls: GEMMs from goroutines sharing one handle
// queue one after another on one stream, so give each concurrent request a
// handle, a stream and a workspace of its own. The workspace must stay
// allocated while work queued on the handle's stream may use it: a pool's
// ReleaseAll waits for that work before it resets, and the handle refuses to
// queue more once the buffer is released. Close (cublasDestroy) synchronises
// the device, as cuBLAS documents.
package cublas
