// Package conformance is the suite NCCL's binding must pass over two or more
// devices, on the fake runtime of cudarttest and on GPUs alike, in the
// manner of testing/fstest.TestFS: TestNCCL checks the result of every
// collective, data type and reduction against the CPU, point-to-point
// transfers, ranks on goroutines, splits, the arguments NCCL refuses, the
// bound on a rank that never joins, registered buffers (a pool's and a
// slot's among them), windows over vmem arenas, the device memory
// communicators take, and blocking communicators (WithInlineLaunch). It
// asserts only what NCCL documents or was measured to do, so that what
// passes on the fake holds on a GPU.
package conformance
