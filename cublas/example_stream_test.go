package cublas_test

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/pool"
)

// A handle's stream comes from the runtime the program chose, on the
// handle's device; the pool is told to wait for it (UseStreams), so that
// ReleaseAll and Close wait for the GEMMs queued there. The handle goes
// first, then the pool forgets the stream, then the stream goes, then the
// pool.
func ExampleLibrary_NewHandle() {
	rt, err := choose.Open("fake") // "" in a program: $CUDAPOOL_RUNTIME, else CUDA where it has a device
	if err != nil {
		panic(err)
	}
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
	if err != nil {
		panic(err)
	}
	ws, _ := p.WantDevice(cublas.DefaultWorkspace, pool.Name("cublas workspace"))
	mats, _ := p.WantDevice(2*4*4*4, pool.Name("a, c"))
	if err := p.Commit(); err != nil {
		panic(err)
	}
	blas, err := cublas.Open(rt)
	if err != nil {
		panic(err)
	}
	s, err := rt.StreamCreate(0)
	if err != nil {
		panic(err)
	}
	h, err := blas.NewHandle(0, s)
	if err != nil {
		panic(err)
	}
	if err := errors.Join(p.UseStreams(s), h.SetWorkspace(ws)); err != nil {
		panic(err)
	}
	pa, _ := mats.Ptr()
	m := func(off uint64) cublas.Matrix { return cublas.Matrix{Ptr: pa.Add(off), Type: cublas.Float32, LD: 4} }
	fmt.Println(h.Gemm(cublas.Gemm{M: 4, N: 4, K: 4, Alpha: 1, A: m(0), B: m(0), C: m(64)})) // queued on s
	fmt.Println(p.ReleaseAll())                                                              // waits for s

	fmt.Println(h.Close(), p.ForgetStreams(s), rt.StreamDestroy(0, s), p.Close(), rt.Close())
	// Output:
	// <nil>
	// <nil>
	// <nil> <nil> <nil> <nil> <nil>
}
