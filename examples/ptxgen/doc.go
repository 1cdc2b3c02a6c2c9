// Package ptxgen writes the part of the examples' PTX kernels that follows
// from a kernel's parameters: the module's header, each entry's signature,
// its register declarations and the loads of its parameters, and the
// thread's index in the grid, and for a kernel run one thread an element,
// the test that ends the threads past the last element. A kernel's text
// then holds only what it computes:
//
//	var scalePTX = ptxgen.Module(
//		ptxgen.Elementwise("scale", "u64 x, f32 a, u32 n", 2, "%r1", `
//		cvta.to.global.u64 %rd2, %rd1;
//		...`),
//	)
//
// Each parameter is loaded into the next register of its class, numbered
// from 1: a u64 (a pointer, or a 64-bit count) into %rd, a u32 into %r, an
// f32 into %f. An entry declares every register its text names, up to the
// highest number of each class, so a body needs no declarations of its own.
//
// It is not part of cudapool's API. It lives under examples/, not
// internal/, only so that an example copied into another module still
// builds; it changes whenever the examples need it to, with no notice.
package ptxgen
