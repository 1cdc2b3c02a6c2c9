// Package nccl runs NCCL's collectives (all-reduce, all-gather,
// reduce-scatter, broadcast, reduce) and point-to-point transfers on device
// memory a program already owns, a pool's buffers included, between the
// GPUs of one process (one goroutine a rank, or one goroutine driving every
// device through Group) or of several processes (InitRank with a UniqueID
// handed from rank 0 to the others).
//
// Open loads libnccl at run time through purego, with no cgo; on the fake
// runtime of cudarttest it is the fake's NCCL instead, which runs the ranks
// of a Fake with N devices in one process and computes every operation on
// the CPU, so that collective code is tested without GPUs.
//
// A communicator never hangs its caller. By default it is non-blocking
// (NCCL's config blocking = 0): an init, a split, an operation and a
// destroy return once NCCL says they are done, polling
// ncclCommGetAsyncError, or after a bound (DefaultTimeout, 10 s, or
// WithTimeout) with an error wrapping ErrTimeout, having aborted the
// communicators still in progress. A rank that never joins, a peer that died
// before posting its part, or ranks that disagree end this way on a GPU; the
// fake names a disagreement at once (ErrInvalidUsage).
//
// NCCL launches a non-blocking communicator's operations from a thread it
// starts at each group end, which the caller then polls for: an eager
// all-reduce from C took 36 to 125 µs longer a call than with blocking
// communicators on 2×H200 (NCCL 2.28.9, 4 KiB to 4 MiB). WithInlineLaunch makes a
// blocking communicator instead (blocking = 1), whose operations NCCL
// launches in the call, as C's default ones: its calls run on a goroutine
// of the binding's, which the caller waits for within the same bound (see
// WithInlineLaunch for what a call past it leaves). Keep the default where
// operations are captured into graphs (they cost the same either way) or
// where a call left waiting for a peer must end with an abort; take the
// blocking kind for eager operations.
//
// One goroutine driving both devices of a process, on buffers x0 and x1 of
// n float32s and streams s0 and s1 of devices 0 and 1 (pool buffers' Ptr,
// say):
//
//	lib, err := nccl.Open(rt) // rt: a choose.Runtime, or a cudarttest fake
//	comms, err := lib.InitAll([]int{0, 1})
//	err = lib.Group(
//		comms[0].AllReduceOp(x0, x0, n, nccl.Float32, nccl.Sum, s0),
//		comms[1].AllReduceOp(x1, x1, n, nccl.Float32, nccl.Sum, s1))
//	err = lib.Wait(rt, nccl.DefaultTimeout, nccl.Queued{Comm: comms[0], Stream: s0}, nccl.Queued{Comm: comms[1], Stream: s1})
//	// x0 and x1 hold the sum; then Destroy each communicator.
//
// Wait polls the streams and the communicators' errors, and aborts them past
// the bound; a synchronisation of the streams would wait for ever for a
// peer that is gone. A goroutine a rank calls Comm.AllReduce instead, and
// slots get a communicator each (see A communicator per slot).
//
// Errors are *Error values with NCCL's result name, its message and its last
// error text (ncclGetLastError); errors.Is matches them against the
// sentinels ErrInvalidArgument, ErrInvalidUsage and the others.
//
// # Memory
//
// NCCL takes device memory of its own, outside any allocation the program
// sees. Measured on 2×H200 with NCCL 2.28.9 and CUDA 13.0, 2 ranks: a
// device's first communicator took 386 MiB at init and 474 MiB more at its
// first collective; each further communicator 198 MiB at init (196 MiB for
// a Split) and 288 MiB more at its first collective. Destroying them all
// gave back all but 378 MiB, which NCCL keeps in the device's context (its
// kernels and static buffers) until the context ends. A blocking
// communicator (WithInlineLaunch) is a split of a non-blocking one, which is
// destroyed after: it holds a split's memory (the conformance group's
// Charge measures it). Size a pool's arena to leave it room: Open and
// InitAll, and run a first collective, before the pool asks the device what
// is free, or subtract it.
//
// # Registered buffers and windows
//
// Register registers a buffer with one rank's communicator
// (ncclCommRegister), a pool's buffer or a slot's as well as any other
// device memory, so that NCCL may skip its own copies. A window
// (RegisterWindow, or RegisterWindows for one goroutine's ranks; NCCL
// 2.27 and later, HasWindows) is registered by every rank alike, and NCCL
// maps each rank's into the others', for collectives that read and write
// the peers' memory directly: its memory must be exportable, as a vmem
// Arena made with vmem.WithHandleTypes(cudart.HandleTypePOSIXFileDescriptor)
// is, and a window must lie in one of the arena's growths. What windows
// cost NCCL in device memory is not measured.
//
// # A communicator per slot
//
// A server's slots (pool.NewSlots, pool.NewMultiSlots on several devices)
// each get a communicator of their own through pool's attachments: make
// the communicators first, slot i's with one InitAll over the devices (or
// InitRank, one process a device), and give them to the slots with
// ForSlots in pool.SlotLayout.Attach. Slot i on device d gets the one of
// comms[i] on device d. A request gets it lent (a Lent, from
// pool.Attached[nccl.Lent], allocating nothing): its operations are queued
// on the slot's stream, and refused with the slot's error
// (pool.ErrSlotReleased) once the slot is released. The slots neither make
// nor destroy the communicators: destroy them after the slots' Close. Each
// costs what a further communicator does (see Memory), per slot and
// device.
//
// # Caveats
//
// A Comm's calls are serialised and a group locks every communicator it
// uses until NCCL has matched it: a rank's goroutine that waits on another
// rank's host code between two operations can deadlock both until the bound
// ends them.
//
// A blocking communicator's call past its bound is left running in NCCL,
// which offers no way to stop it (ncclCommAbort must not run during a call
// on the communicator): the caller gets ErrTimeout, the communicator is
// closed, and the binding aborts it when NCCL returns. Until then the call
// holds an OS thread and the communicator's memory, and Abort waits
// AbortWait at most for it. Its Destroy waits for its kernels
// (ncclCommFinalize): wait for its streams first (Wait), which aborts it
// past the bound where a peer is gone. The work NCCL queues runs on the stream given; a kernel waiting
// for a peer that never comes blocks that stream on a GPU, and a
// synchronisation of it, until Abort from another goroutine.
//
// Collectives captured into CUDA graphs by one goroutine over several
// devices (a Group of their operations, each device's stream capturing, on
// one locked OS thread): end every device's capture before instantiating
// any of the graphs. In thread-local or global mode, cudaGraphInstantiate
// while another capture of the thread is under way fails with
// cudaErrorStreamCaptureUnsupported and invalidates that capture, whose
// end then fails with cudaErrorStreamCaptureInvalidated (on 2×H200, CUDA
// 13.0); the fake refuses it too, on any goroutine, as it cannot see
// threads. Launch every device's graph before synchronising any stream: a
// graph's collective waits for the other devices' graphs, and NCCL warns
// that with several devices a thread, a cudaGraphLaunch may block until
// they are launched. A goroutine a rank (each capturing in relaxed mode),
// or a process a GPU, avoids both.
//
// A Lent checks its lease before each operation is posted: an operation
// posted while its slot is being released (a request racing its own
// Release) still runs, on the slot's stream, which the Release waits for.
// Ranks of one communicator are slots of one index on several devices: a
// request on one of them that posts a collective waits, within the bound,
// for the same collective on the others.
package nccl
