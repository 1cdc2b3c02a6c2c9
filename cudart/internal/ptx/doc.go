// Package ptx reads the kernel entry points of PTX text and checks a launch
// against them, before CUDA sees it, and refuses what the driver's JIT
// refuses of the parts it reads: the binding in cudart and the fake in
// cudarttest check modules and launches the same way. It is not part of a
// user's API.
package ptx
