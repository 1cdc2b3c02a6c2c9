package cudarttest

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// graphMem is the memory a capture allocated with cudaMallocAsync. CUDA
// records a memory allocation node for it, and a memory free node for its
// cudaFreeAsync in the same capture; each launch of the graph then
// allocates it at the same address and frees it. The fake allocates it once,
// at the capture's MallocAsync, and keeps it while the graph or an
// instantiation of it lives, so that every replay finds it.
//
// The fake models only memory the capture frees too: a capture that ends
// with memory it allocated and did not free fails with
// cudaErrorNotSupported (CUDA hands such memory to the program after the
// first launch), and so does a free of a graph's memory outside its
// capture. Memory allocated in a capture is charged from the capture on,
// and reading it outside the graph is not refused, which CUDA leaves
// undefined.
type graphMem struct {
	regions []*region
	refs    int // the graph and its instantiations alive
}

// hold is m for one more holder; nil for nil.
func (m *graphMem) hold() *graphMem {
	if m != nil {
		m.refs++
	}
	return m
}

// dropGraphMem lets go of m for one holder; the last frees its memory.
func (f *Fake) dropGraphMem(m *graphMem) {
	if m == nil {
		return
	}
	if m.refs--; m.refs == 0 {
		f.releaseGraphMem(m)
	}
}

// releaseGraphMem frees each region of m still live: a reset may have
// freed them first.
func (f *Fake) releaseGraphMem(m *graphMem) {
	for _, r := range m.regions {
		if i, ok := f.index(r.base); ok && f.regions[i] == r {
			f.release(r)
		}
	}
}

// captureAlloc records the allocation of p, made by MallocAsync on stream
// s, into the capture of s, if s captures.
func (f *Fake) captureAlloc(s cudart.Stream, p cudart.DevicePtr) {
	cp := f.graph.captures[s]
	if cp == nil {
		return
	}
	i, _ := f.index(uint64(p))
	r := f.regions[i]
	if cp.mem == nil {
		cp.mem = &graphMem{}
	}
	cp.mem.regions = append(cp.mem.regions, r)
	r.graph = cp.mem
	f.recordMemNode(s, cudart.GraphNodeMemAlloc)
}

// captureFree handles a FreeAsync on stream s of r, memory a capture
// allocated: recorded into the capture of s as a memory free node when s
// captures the capture that allocated r, refused otherwise. A second free
// is refused by free, as r is then freeQueued.
func (f *Fake) captureFree(s cudart.Stream, r *region) *failure {
	if r.freeQueued {
		return f.free(cudart.DevicePtr(r.base), kindAsync)
	}
	if cp := f.graph.captures[s]; cp == nil || cp.mem != r.graph {
		return fail(801, "%s was allocated in a capture: the fake models only its free in the same capture", r.describe())
	}
	r.freeQueued = true
	f.recordMemNode(s, cudart.GraphNodeMemFree)
	return nil
}

// settleCaptureMem decides, as capture cp ends with failure x (nil when it
// succeeded), what becomes of the memory it allocated: a graph's, held
// once, when the capture freed all of it and succeeded; freed otherwise,
// the end failing with cudaErrorNotSupported if nothing else failed it.
func (f *Fake) settleCaptureMem(cp *capture, x *failure) *failure {
	m := cp.mem
	if m == nil {
		return x
	}
	for _, r := range m.regions {
		if x == nil && !r.freeQueued {
			x = fail(801, "%s was allocated in the capture and not freed in it: the fake models only memory a graph frees itself", r.describe())
		}
	}
	if x != nil {
		f.releaseGraphMem(m)
		return x
	}
	m.refs = 1
	return nil
}

// recordMemNode records into the capture of stream s a node of type typ,
// cudart.GraphNodeMemAlloc or cudart.GraphNodeMemFree, and reports whether
// s captures: nothing is recorded when it does not.
//
// Library.Enqueue calls it for a library's work that takes scratch memory
// inside a capture (Work.Scratch), as CUDA's cuBLAS does for a GEMM with no
// workspace set: with GraphNodeMemAlloc before it records the work on s
// (through enqueue), and with GraphNodeMemFree after, so that the graph
// holds the nodes CUDA's would. The nodes stand for memory the fake neither
// allocates nor charges, and run nothing when the graph is launched. The
// caller holds f.mu and has checked s and its device (streamOn). Any other
// typ panics: it is a bug in the fake.
func (f *Fake) recordMemNode(s cudart.Stream, typ cudart.GraphNodeType) bool {
	call := calls.MallocAsync
	switch typ {
	case cudart.GraphNodeMemAlloc:
	case cudart.GraphNodeMemFree:
		call = calls.FreeAsync
	default:
		panic(fmt.Errorf("cudarttest: recordMemNode of a %s", typ))
	}
	cp := f.graph.captures[s]
	if cp == nil {
		return false
	}
	cp.mark(call, typ)
	return true
}
