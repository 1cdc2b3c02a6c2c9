package bytekernels

import (
	"bytes"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/ptxgen"
)

// PTX is the module of both kernels, for the driver to compile at load.
var PTX = ptxgen.Module(
	ptxgen.Entry(Fill, "u64 ptr, u64 n, u32 value", ptxgen.Index64(2, 3)+`
	setp.ge.u64 %p, %rd4, %rd2;
	@%p bra $L_fill_done;
	cvta.to.global.u64 %rd5, %rd1;
	add.s64 %rd6, %rd5, %rd4;
	st.global.u8 [%rd6], %r1;
$L_fill_done:
	ret;`),
	ptxgen.Entry(Copy, "u64 dst, u64 src, u64 n", ptxgen.Index64(1, 4)+`
	setp.ge.u64 %p, %rd5, %rd3;
	@%p bra $L_copy_done;
	cvta.to.global.u64 %rd6, %rd1;
	cvta.to.global.u64 %rd7, %rd2;
	add.s64 %rd8, %rd7, %rd5;
	ld.global.u8 %r4, [%rd8];
	add.s64 %rd9, %rd6, %rd5;
	st.global.u8 [%rd9], %r4;
$L_copy_done:
	ret;`),
)

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
