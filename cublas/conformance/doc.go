// Package conformance is cuBLAS's part of the conformance suite that every
// cudart.Runtime must pass: its groups (Groups) run by the runtime's suite
// runner, cudarttest/conformance's TestRuntime, after the runtime's own
// groups and before the device reset that ends it, so that the reset is
// proven after cuBLAS has worked on the device in the same process. Its
// tests run them on the fake of cudarttest in CI and on real CUDA on a GPU
// host. Like the runtime's suite, it asserts only what cuBLAS does on a
// GPU, and imports no testify.
package conformance
