package main

import (
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/floats"
	"github.com/cudapool/cudapool/examples/ptxgen"
)

// kernelsPTX holds the two kernels of the pipeline, for the driver to compile
// at load. Multiply and add round separately (mul.rn, add.rn: never fused
// into one fma), so the CPU's float32 arithmetic gives the same bits.
//
//	affine(f32 *out, f32 *in, f32 a, f32 b, u32 n)   out[i] = a*in[i] + b
//	add(f32 *out, f32 *x, f32 *y, u32 n)            out[i] = x[i] + y[i]
var kernelsPTX = ptxgen.Module(
	ptxgen.Elementwise("affine", "u64 out, u64 in, f32 a, f32 b, u32 n", 2, "%r1", `
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mul.wide.u32 %rd5, %r5, 4;
	add.s64 %rd6, %rd4, %rd5;
	ld.global.f32 %f3, [%rd6];
	mul.rn.f32 %f4, %f1, %f3;
	add.rn.f32 %f5, %f4, %f2;
	add.s64 %rd7, %rd3, %rd5;
	st.global.f32 [%rd7], %f5;`),
	ptxgen.Elementwise("add", "u64 out, u64 x, u64 y, u32 n", 2, "%r1", `
	cvta.to.global.u64 %rd4, %rd1;
	cvta.to.global.u64 %rd5, %rd2;
	cvta.to.global.u64 %rd6, %rd3;
	mul.wide.u32 %rd7, %r5, 4;
	add.s64 %rd8, %rd5, %rd7;
	ld.global.f32 %f1, [%rd8];
	add.s64 %rd9, %rd6, %rd7;
	ld.global.f32 %f2, [%rd9];
	add.rn.f32 %f3, %f1, %f2;
	add.s64 %rd10, %rd4, %rd7;
	st.global.f32 [%rd10], %f3;`),
)

// affine and add are the CPU's reference for the kernels, and on the fake
// their implementation. The conversions round each operation to float32, as
// the kernels do, and keep the compiler from fusing them.
func affine(a, x, b float32) float32 { return float32(a*x) + b }
func add(x, y float32) float32       { return x + y }

// registerKernels gives the fake a Go implementation of each PTX entry; real
// CUDA runs the PTX.
func registerKernels(rt cudart.Full) {
	f, ok := cudart.As[*cudarttest.Fake](rt)
	if !ok {
		return
	}
	f.RegisterKernel("affine", func(k *cudarttest.KernelContext) error {
		n := elements(k, 4)
		in := readFloats(k, k.Ptr(1), n)
		a, b := k.Float32(2), k.Float32(3)
		for i, x := range in {
			in[i] = affine(a, x, b)
		}
		writeFloats(k, k.Ptr(0), in)
		return nil
	})
	f.RegisterKernel("add", func(k *cudarttest.KernelContext) error {
		n := elements(k, 3)
		x, y := readFloats(k, k.Ptr(1), n), readFloats(k, k.Ptr(2), n)
		for i := range x {
			x[i] = add(x[i], y[i])
		}
		writeFloats(k, k.Ptr(0), x)
		return nil
	})
}

// elements is how many elements a launch touches: the count argument, but no
// more than it has threads, as on the GPU.
func elements(k *cudarttest.KernelContext, countArg int) int {
	return int(min(uint64(k.Uint32(countArg)), k.Threads()))
}

func readFloats(k *cudarttest.KernelContext, p cudart.DevicePtr, n int) []float32 {
	b := make([]byte, 4*n)
	k.Read(p, b)
	return floats.Of(b)
}

func writeFloats(k *cudarttest.KernelContext, p cudart.DevicePtr, v []float32) {
	k.Write(p, floats.Bytes(v))
}
