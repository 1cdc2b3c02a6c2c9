package cudarttest_test

import (
	"encoding/binary"
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// A PTX kernel runs on the fake as a Go function over the fake's device
// memory: the fake reads the PTX's .entry declarations, checks each launch
// against them, and calls the function registered under the entry's name.
func ExampleFake_RegisterKernel() {
	const ptx = `
.version 8.0
.target sm_80
.address_size 64
.visible .entry iota(.param .u64 out, .param .u32 n)
{
	ret; // the GPU's code; the fake runs the Go function below
}`
	f := cudarttest.NewFake()
	f.RegisterKernel("iota", func(k *cudarttest.KernelContext) error {
		out, n := k.Ptr(0), uint64(k.Uint32(1))
		for i := range min(n, k.Threads()) {
			k.Write(out.Add(4*i), binary.LittleEndian.AppendUint32(nil, uint32(i)))
		}
		return nil
	})
	m, err := f.ModuleLoadData(0, ptx)
	if err != nil {
		panic(err)
	}
	fn, err := f.ModuleGetFunction(0, m, "iota")
	if err != nil {
		panic(err)
	}
	p, err := f.Malloc(0, 16)
	if err != nil {
		panic(err)
	}
	if err := f.LaunchKernel(0, fn, cudart.Dim1(2), cudart.Dim1(2), 0, 0, cudart.Arg(p), cudart.Arg[uint32](4)); err != nil {
		panic(err)
	}
	out := make([]byte, 16)
	if err := f.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(p, 16), cudart.DeviceToHost); err != nil {
		panic(err)
	}
	fmt.Println(out)
	fmt.Println(f.LaunchKernel(0, fn, cudart.Dim1(1), cudart.Dim1(4), 0, 0, cudart.Arg(p)))
	_ = f.Free(0, p)
	_ = f.ModuleUnload(0, m)
	// Output:
	// [0 0 0 0 1 0 0 0 2 0 0 0 3 0 0 0]
	// cudart: cuLaunchKernel(iota, grid (1,1,1), block (4,1,1), 0 B shared, stream 0x0, [ptr(0x200000000000)]) on device 0: kernel iota takes 2 arguments (of [8 4] bytes), got 1: cudaErrorInvalidValue (1): invalid argument
}
