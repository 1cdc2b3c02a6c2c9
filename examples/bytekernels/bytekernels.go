package bytekernels

import (
	"bytes"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// PTX is the module of both kernels, for the driver to compile at load.
const PTX = `
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

// Fill and Copy are PTX's entries.
const (
	Fill = "fill"
	Copy = "copy"
)

// Register gives the fake runtime a Go implementation of each PTX entry,
// before its module is loaded; on real CUDA, which runs the PTX, it does
// nothing. They touch memory through the KernelContext, so the fake checks
// every access as it would a GPU's, memcheck included.
func Register(rt cudart.Runtime) {
	f, ok := cudart.As[*cudarttest.Fake](rt)
	if !ok {
		return
	}
	f.RegisterKernel(Fill, func(k *cudarttest.KernelContext) error {
		n := threads(k, 1)
		k.Write(k.Ptr(0), bytes.Repeat([]byte{byte(k.Uint32(2))}, n))
		return nil
	})
	f.RegisterKernel(Copy, func(k *cudarttest.KernelContext) error {
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
