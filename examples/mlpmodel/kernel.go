package mlpmodel

import (
	"errors"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/floats"
	"github.com/cudapool/cudapool/examples/ptxgen"
)

// BiasPTX is the kernel that follows each layer's GEMM: it adds the layer's
// bias to every column of the layer's output, in place, and with relu set
// clamps it at 0. The add rounds once (add.rn), as float32 addition does on
// the CPU. Launch it with BlockSize threads a block, one thread an element.
//
//	bias_act(f32 *y, f32 *bias, u32 rows, u32 n, u32 relu)   y[i] = act(y[i] + bias[i%rows])
var BiasPTX = ptxgen.Module(
	ptxgen.Elementwise("bias_act", "u64 y, u64 bias, u32 rows, u32 n, u32 relu", 4, "%r2", `
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mul.wide.u32 %rd5, %r7, 4;
	add.s64 %rd6, %rd3, %rd5;
	ld.global.f32 %f1, [%rd6];
	rem.u32 %r8, %r7, %r1;
	mul.wide.u32 %rd7, %r8, 4;
	add.s64 %rd8, %rd4, %rd7;
	ld.global.f32 %f2, [%rd8];
	add.rn.f32 %f3, %f1, %f2;
	setp.ne.u32 %p1, %r3, 0;
	@%p1 max.f32 %f3, %f3, 0f00000000;
	st.global.f32 [%rd6], %f3;`),
)

// KernelName is BiasPTX's entry.
const KernelName = "bias_act"

// BlockSize is the threads of one block of every bias_act launch.
const BlockSize = 256

// LoadKernel loads BiasPTX on device dev: its module, to unload when done,
// and its entry. On the fake, RegisterKernel comes first.
func LoadKernel(rt cudart.Kernels, dev int) (cudart.Module, cudart.Function, error) {
	m, err := rt.ModuleLoadData(dev, BiasPTX)
	if err != nil {
		return 0, 0, err
	}
	fn, err := rt.ModuleGetFunction(dev, m, KernelName)
	if err != nil {
		return 0, 0, errors.Join(err, rt.ModuleUnload(dev, m))
	}
	return m, fn, nil
}

// RegisterKernel gives the fake runtime a Go implementation of BiasPTX's
// entry, before its module is loaded; on real CUDA, which runs the PTX, it
// does nothing.
func RegisterKernel(rt cudart.Runtime) {
	f, ok := cudart.As[*cudarttest.Fake](rt)
	if !ok {
		return
	}
	f.RegisterKernel(KernelName, func(k *cudarttest.KernelContext) error {
		rows := int(k.Uint32(2))
		n := int(min(uint64(k.Uint32(3)), k.Threads()))
		if rows == 0 || n == 0 {
			return nil
		}
		y, bias := make([]byte, 4*n), make([]byte, 4*min(rows, n))
		if !k.Read(k.Ptr(0), y) || !k.Read(k.Ptr(1), bias) {
			return nil
		}
		yv, bv, relu := floats.Of(y), floats.Of(bias), k.Uint32(4) != 0
		for i := range yv {
			yv[i] = BiasAct(yv[i], bv[i%rows], relu)
		}
		k.Write(k.Ptr(0), floats.Bytes(yv))
		return nil
	})
}
