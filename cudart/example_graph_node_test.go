package cudart_test

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// A test asserts what a captured graph does when it runs: here it takes
// memory of its own, a memory allocation node and a memory free node, which
// a request's graph served from a pool must not.
func ExampleCountGraphNodes() {
	f := cudarttest.NewFake()
	s, err := f.StreamCreate(0)
	if err != nil {
		panic(err)
	}
	defer f.StreamDestroy(0, s)
	if err := f.StreamBeginCapture(0, s, cudart.CaptureModeRelaxed); err != nil {
		panic(err)
	}
	p, err := f.MallocAsync(0, 1<<20, s)
	if err != nil {
		panic(err)
	}
	if err := f.MemsetAsync(0, p, 0, 1<<20, s); err != nil {
		panic(err)
	}
	if err := f.FreeAsync(0, p, s); err != nil {
		panic(err)
	}
	g, err := f.StreamEndCapture(0, s)
	if err != nil {
		panic(err)
	}
	defer f.GraphDestroy(0, g)

	counts, err := cudart.CountGraphNodes(f, 0, g)
	if err != nil {
		panic(err)
	}
	fmt.Println(counts)
	fmt.Println("memory nodes:", counts.Memory())
	// Output:
	// cudaGraphNodeTypeMemset=1 cudaGraphNodeTypeMemAlloc=1 cudaGraphNodeTypeMemFree=1
	// memory nodes: 2
}
