package cublas_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// A 2×2 GEMM on the fake runtime, its workspace and operands from a pool.
func ExampleHandle_Gemm() {
	rt := cudarttest.NewFake()
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
	if err != nil {
		panic(err)
	}
	defer p.Close()
	ws, _ := p.WantDevice(32<<20, pool.Name("cublas workspace"))
	mats, _ := p.WantDevice(3*4*4, pool.Name("a, b, c"))
	if err := p.Commit(); err != nil {
		panic(err)
	}

	blas, err := cublas.Open(rt)
	if err != nil {
		panic(err)
	}
	h, err := blas.NewHandle(0, 0)
	if err != nil {
		panic(err)
	}
	defer h.Close()
	if err := h.SetWorkspace(ws); err != nil {
		panic(err)
	}

	// Column-major: A = [1 2; 3 4] is stored 1, 3, 2, 4; B is the identity.
	in := make([]byte, 32)
	for i, v := range []float32{1, 3, 2, 4, 1, 0, 0, 1} {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(v))
	}
	base, _ := mats.Ptr()
	if err := rt.Memcpy(0, cudart.DeviceMem(base, 32), cudart.HostMem(in), cudart.HostToDevice); err != nil {
		panic(err)
	}
	m := func(i int) cublas.Matrix {
		return cublas.Matrix{Ptr: base.Add(uint64(16 * i)), Type: cublas.Float32, LD: 2}
	}
	if err := h.Gemm(cublas.Gemm{M: 2, N: 2, K: 2, Alpha: 2, A: m(0), B: m(1), C: m(2)}); err != nil {
		panic(err)
	}
	out := make([]byte, 16)
	if err := rt.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(base.Add(32), 16), cudart.DeviceToHost); err != nil {
		panic(err)
	}
	for i := range 4 {
		fmt.Print(math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])), " ")
	}
	fmt.Println()
	// Output: 2 6 4 8
}
