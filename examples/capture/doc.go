// Package capture records the work a function queues on one or more
// streams into CUDA graphs, as the examples that launch graphs do (gemm,
// serve, mlp, tp), keeps a serving example's graphs: one a batch size
// (ByRows), or one a slot and profile (PerSlot), and runs a request's work
// through its graph, or call by call where it has none (Run).
//
// A capture is thread-local (cudart.CaptureModeThreadLocal), so that other
// goroutines' CUDA calls go on meanwhile, and begins and ends on one locked
// OS thread, as that mode needs. Every capture ends before any graph is
// instantiated: while one of a thread's captures is under way, CUDA refuses
// cudaGraphInstantiate (cudaErrorStreamCaptureUnsupported) and invalidates
// that capture, as examples/tp found on two GPUs.
//
// It is not part of cudapool's API. It lives under examples/, not
// internal/, only so that an example copied into another module still
// builds; it changes whenever the examples need it to, with no notice.
// What a graph records, and how a request finds its slot, stay in the
// example.
package capture
