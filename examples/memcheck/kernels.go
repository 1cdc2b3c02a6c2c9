package main

import (
	"bytes"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// kernelsPTX holds the two kernels the bugs launch, one thread a byte. Each
// thread checks its index against n, as real kernels do: the bugs are in the
// n the host passes, not in the kernels, which is where such bugs usually
// are. The index is 64-bit (mad.wide) so that n can be any u64.
//
//	fill(u8 *ptr, u64 n, u32 value)   ptr[i] = value
//	copy(u8 *dst, u8 *src, u64 n)     dst[i] = src[i]
const kernelsPTX = `
.version 8.0
.target sm_80
.address_size 64

.visible .entry fill(.param .u64 ptr, .param .u64 n, .param .u32 value)
{
	.reg .pred %p;
	.reg .b32 %r<5>;
	.reg .b64 %rd<7>;
	ld.param.u64 %rd1, [ptr];
	ld.param.u64 %rd2, [n];
	ld.param.u32 %r1, [value];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	cvt.u64.u32 %rd3, %r4;
	mad.wide.u32 %rd4, %r2, %r3, %rd3;
	setp.ge.u64 %p, %rd4, %rd2;
	@%p bra $L_fill_done;
	cvta.to.global.u64 %rd5, %rd1;
	add.s64 %rd6, %rd5, %rd4;
	st.global.u8 [%rd6], %r1;
$L_fill_done:
	ret;
}

.visible .entry copy(.param .u64 dst, .param .u64 src, .param .u64 n)
{
	.reg .pred %p;
	.reg .b32 %r<5>;
	.reg .b64 %rd<10>;
	ld.param.u64 %rd1, [dst];
	ld.param.u64 %rd2, [src];
	ld.param.u64 %rd3, [n];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	cvt.u64.u32 %rd4, %r3;
	mad.wide.u32 %rd5, %r1, %r2, %rd4;
	setp.ge.u64 %p, %rd5, %rd3;
	@%p bra $L_copy_done;
	cvta.to.global.u64 %rd6, %rd1;
	cvta.to.global.u64 %rd7, %rd2;
	add.s64 %rd8, %rd7, %rd5;
	ld.global.u8 %r4, [%rd8];
	add.s64 %rd9, %rd6, %rd5;
	st.global.u8 [%rd9], %r4;
$L_copy_done:
	ret;
}
`

// registerKernels gives the fake a Go implementation of each PTX entry; real
// CUDA runs the PTX. They touch memory through the KernelContext, so the
// fake checks every access as it would a GPU's, memcheck included.
func registerKernels(rt cudart.Full) {
	f, ok := cudart.As[*cudarttest.Fake](rt)
	if !ok {
		return
	}
	f.RegisterKernel("fill", func(k *cudarttest.KernelContext) error {
		n := threads(k, 1)
		k.Write(k.Ptr(0), bytes.Repeat([]byte{byte(k.Uint32(2))}, n))
		return nil
	})
	f.RegisterKernel("copy", func(k *cudarttest.KernelContext) error {
		b := make([]byte, threads(k, 2))
		if k.Read(k.Ptr(1), b) {
			k.Write(k.Ptr(0), b)
		}
		return nil
	})
}

// threads is how many bytes a launch touches: the count argument, but no
// more than it has threads, as on the GPU.
func threads(k *cudarttest.KernelContext, countArg int) int {
	return int(min(k.Uint64(countArg), k.Threads()))
}
