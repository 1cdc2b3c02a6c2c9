package conformance

import (
	"encoding/binary"
	"math"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// suitePTX holds the kernels the suite launches, written by hand (there is
// no nvcc where the suite is built) for the driver to compile at load:
//
//	fill(u32 *p, u32 n, u32 value)       p[i] = value for each thread i < n
//	axpy(f32 *y, f32 *x, f32 a, u32 n)   y[i] = a*x[i] + y[i] for i < n
//	args(void *out, s32, u32, s64, u64, f32, f64)
//	                                     thread 0 stores its arguments at out,
//	                                     at offsets 0, 4, 8, 16, 24 and 32
const suitePTX = `
.version 8.0
.target sm_80
.address_size 64

.visible .entry fill(
	.param .u64 fill_p,
	.param .u32 fill_n,
	.param .u32 fill_value
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<5>;

	ld.param.u64 %rd1, [fill_p];
	ld.param.u32 %r1, [fill_n];
	ld.param.u32 %r5, [fill_value];` + gridIndex + `
	@%p1 bra FILL_DONE;
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r2, 4;
	add.s64 %rd4, %rd2, %rd3;
	st.global.u32 [%rd4], %r5;
FILL_DONE:
	ret;
}

.visible .entry axpy(
	.param .u64 axpy_y,
	.param .u64 axpy_x,
	.param .f32 axpy_a,
	.param .u32 axpy_n
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<5>;
	.reg .f32 %f<5>;
	.reg .b64 %rd<7>;

	ld.param.u64 %rd1, [axpy_y];
	ld.param.u64 %rd2, [axpy_x];
	ld.param.f32 %f1, [axpy_a];
	ld.param.u32 %r1, [axpy_n];` + gridIndex + `
	@%p1 bra AXPY_DONE;
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mul.wide.u32 %rd5, %r2, 4;
	add.s64 %rd6, %rd4, %rd5;
	ld.global.f32 %f2, [%rd6];
	add.s64 %rd6, %rd3, %rd5;
	ld.global.f32 %f3, [%rd6];
	fma.rn.f32 %f4, %f1, %f2, %f3;
	st.global.f32 [%rd6], %f4;
AXPY_DONE:
	ret;
}

.visible .entry args(
	.param .u64 args_out,
	.param .s32 args_a,
	.param .u32 args_b,
	.param .s64 args_c,
	.param .u64 args_d,
	.param .f32 args_e,
	.param .f64 args_f
)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<4>;
	.reg .f32 %f<2>;
	.reg .f64 %fd<2>;

	ld.param.u64 %rd1, [args_out];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.s32 %r1, [args_a];
	ld.param.u32 %r2, [args_b];
	ld.param.s64 %rd2, [args_c];
	ld.param.u64 %rd3, [args_d];
	ld.param.f32 %f1, [args_e];
	ld.param.f64 %fd1, [args_f];
	st.global.s32 [%rd1], %r1;
	st.global.u32 [%rd1+4], %r2;
	st.global.s64 [%rd1+8], %rd2;
	st.global.u64 [%rd1+16], %rd3;
	st.global.f32 [%rd1+24], %f1;
	st.global.f64 [%rd1+32], %fd1;
	ret;
}
`

// gridIndex is the PTX that sets %r2 to the calling thread's index in the
// grid, and %p1 where that is %r1 (n) or more. It uses %r2 to %r4.
const gridIndex = `
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r2, %r2, %r3, %r4;
	setp.ge.u32 %p1, %r2, %r1;`

// callMalloc is the PTX of %rd3 = malloc(%rd2), through the device-side
// heap.
const callMalloc = `
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd2;
	.param .b64 retval0;
	call.uni (retval0), malloc, (param0);
	ld.param.b64 %rd3, [retval0];
	}`

// suiteHeapPTX is kernels that call device-side malloc and free:
//
//	heap(u32 *out, u64 size)       thread 0: p = malloc(size); *out = p != NULL;
//	                               then writes a byte to p and frees it
//	heapKeep(u64 *out, u64 size)   thread 0: *out = malloc(size)
//	heapFree(u64 p)                thread 0: free(p)
const suiteHeapPTX = `
.version 8.0
.target sm_80
.address_size 64

.extern .func (.param .b64 func_retval0) malloc
(
	.param .b64 malloc_param_0
)
;

.extern .func free
(
	.param .b64 free_param_0
)
;

.visible .entry heap(
	.param .u64 heap_out,
	.param .u64 heap_size
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<4>;

	ld.param.u64 %rd1, [heap_out];
	ld.param.u64 %rd2, [heap_size];
	cvta.to.global.u64 %rd1, %rd1;` + callMalloc + `
	setp.eq.s64 %p1, %rd3, 0;
	selp.u32 %r1, 0, 1, %p1;
	st.global.u32 [%rd1], %r1;
	@%p1 bra HEAP_DONE;
	mov.u32 %r2, 7;
	st.u8 [%rd3], %r2;
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd3;
	call.uni free, (param0);
	}
HEAP_DONE:
	ret;
}

.visible .entry heapKeep(
	.param .u64 heapKeep_out,
	.param .u64 heapKeep_size
)
{
	.reg .b64 %rd<4>;

	ld.param.u64 %rd1, [heapKeep_out];
	ld.param.u64 %rd2, [heapKeep_size];
	cvta.to.global.u64 %rd1, %rd1;` + callMalloc + `
	st.global.u64 [%rd1], %rd3;
	ret;
}

.visible .entry heapFree(
	.param .u64 heapFree_p
)
{
	.reg .b64 %rd<2>;

	ld.param.u64 %rd1, [heapFree_p];
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd1;
	call.uni free, (param0);
	}
	ret;
}
`

// kernelRegistrar is a runtime that runs PTX kernels as Go functions, as the
// fake does: the suite registers its kernels there.
type kernelRegistrar interface {
	RegisterKernel(name string, fn cudarttest.KernelFunc)
}

// registerSuiteKernels gives rt the Go implementations of the suite's
// kernels when it needs them.
func registerSuiteKernels(rt cudart.Runtime) {
	r, ok := rt.(kernelRegistrar)
	if !ok {
		return
	}
	r.RegisterKernel("fill", goFill)
	r.RegisterKernel("axpy", goAxpy)
	r.RegisterKernel("args", goArgs)
	r.RegisterKernel("heap", goHeap)
	r.RegisterKernel("heapKeep", goHeapKeep)
	r.RegisterKernel("heapFree", goHeapFree)
}

func goFill(k *cudarttest.KernelContext) error {
	n := uint64(k.Uint32(1))
	b := binary.LittleEndian.AppendUint32(nil, k.Uint32(2))
	p := k.Ptr(0)
	for i := range min(n, k.Threads()) {
		k.Write(p.Add(4*i), b)
	}
	return nil
}

func goAxpy(k *cudarttest.KernelContext) error {
	y, x, a := k.Ptr(0), k.Ptr(1), k.Float32(2)
	n := min(uint64(k.Uint32(3)), k.Threads())
	var xb, yb [4]byte
	for i := range n {
		k.Read(x.Add(4*i), xb[:])
		k.Read(y.Add(4*i), yb[:])
		xv := math.Float32frombits(binary.LittleEndian.Uint32(xb[:]))
		yv := math.Float32frombits(binary.LittleEndian.Uint32(yb[:]))
		// fma.rn.f32 rounds once; in float64 the product of two float32s
		// is exact, so one rounding to float32 follows where the sum is too.
		r := float32(math.FMA(float64(a), float64(xv), float64(yv)))
		k.Write(y.Add(4*i), binary.LittleEndian.AppendUint32(nil, math.Float32bits(r)))
	}
	return nil
}

func goArgs(k *cudarttest.KernelContext) error {
	out := make([]byte, 0, argsOutBytes)
	out = binary.LittleEndian.AppendUint32(out, uint32(k.Int32(1)))
	out = binary.LittleEndian.AppendUint32(out, k.Uint32(2))
	out = binary.LittleEndian.AppendUint64(out, uint64(k.Int64(3)))
	out = binary.LittleEndian.AppendUint64(out, k.Uint64(4))
	out = binary.LittleEndian.AppendUint32(out, math.Float32bits(k.Float32(5)))
	out = append(out, 0, 0, 0, 0)
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(k.Float64(6)))
	k.Write(k.Ptr(0), out)
	return nil
}

// argsOutBytes is what args writes.
const argsOutBytes = 40

func goHeap(k *cudarttest.KernelContext) error {
	p := k.Malloc(k.Uint64(1))
	got := uint32(0)
	if p != 0 {
		got = 1
	}
	k.Write(k.Ptr(0), binary.LittleEndian.AppendUint32(nil, got))
	if p != 0 {
		k.Write(p, []byte{7})
		k.Free(p)
	}
	return nil
}

func goHeapKeep(k *cudarttest.KernelContext) error {
	k.Write(k.Ptr(0), binary.LittleEndian.AppendUint64(nil, uint64(k.Malloc(k.Uint64(1)))))
	return nil
}

func goHeapFree(k *cudarttest.KernelContext) error {
	k.Free(k.Ptr(0))
	return nil
}
