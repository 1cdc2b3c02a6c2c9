package main

import (
	"errors"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/capture"
	"github.com/cudapool/cudapool/examples/floats"
	"github.com/cudapool/cudapool/examples/mlpmodel"
)

const dev = 0

// model is the MLP every backend runs: three layers, each a GEMM of its
// weights (A, outputs × inputs) by the batch's activations (B, inputs ×
// batch, a column a request row), then bias_act; ReLU after the first two.
// Its parameters lie in one buffer, as on the device: W1 b1 W2 b2 W3 b3,
// each W column-major.
type model struct {
	*mlpmodel.Params
	rt  cudart.Full
	mod cudart.Module
	fn  cudart.Function
}

// layers is the number of layers.
const layers = mlpmodel.Layers

// newModel draws the parameters from seed (mlpmodel.New) and loads the
// kernel.
func newModel(rt cudart.Full, dims [4]int, seed uint64) (*model, error) {
	mlpmodel.RegisterKernel(rt)
	m := &model{rt: rt, Params: mlpmodel.New(dims, seed)}
	var err error
	if m.mod, m.fn, err = mlpmodel.LoadKernel(rt, dev); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *model) close() error { return m.rt.ModuleUnload(dev, m.mod) }

// actBytes is the size of one activation buffer at rows batch rows.
func (m *model) actBytes(rows int) uint64 { return 4 * uint64(m.Widest()*rows) }

// loadParams copies the parameters to p.
func (m *model) loadParams(p cudart.DevicePtr) error {
	b := floats.Bytes(m.Values)
	return m.rt.Memcpy(dev, cudart.DeviceMem(p, uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice)
}

// buffers are where one request runs: pinned staging in and out, two
// device activations and the parameters.
type buffers struct {
	in, out []byte
	x, y, w cudart.DevicePtr
	// async takes x and y with cudaMallocAsync in each request and gives
	// them back with cudaFreeAsync, in stream order; in a captured graph
	// these are memory nodes.
	async bool
}

// gemmer queues GEMMs: a *cublas.Handle of the program's, or a slot's,
// lent to the request (cublas.Lent).
type gemmer interface {
	Gemm(cublas.Gemm) error
}

// enqueue queues one request of rows batch rows on s, with h bound to s:
// the input in, three layers ping-ponging between x and y, the output out.
// Nothing waits.
func (m *model) enqueue(s cudart.Stream, h gemmer, b buffers, rows int) (err error) {
	for _, p := range []*cudart.DevicePtr{&b.x, &b.y} {
		if !b.async {
			break
		}
		if *p, err = m.rt.MallocAsync(dev, m.actBytes(rows), s); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, m.rt.FreeAsync(dev, *p, s)) }()
	}
	in := uint64(4 * m.Dims[0] * rows)
	if err := m.rt.MemcpyAsync(dev, cudart.DeviceMem(b.x, in), cudart.HostMem(b.in[:in]), cudart.HostToDevice, s); err != nil {
		return err
	}
	src, dst := b.x, b.y
	for l := range layers {
		k, mOut := m.Dims[l], m.Dims[l+1]
		g := cublas.Gemm{
			TransA: cublas.NoTrans, TransB: cublas.NoTrans, M: mOut, N: rows, K: k, Alpha: 1,
			A: cublas.Matrix{Ptr: b.w.Add(4 * uint64(m.OffW[l])), Type: cublas.Float32, LD: mOut},
			B: cublas.Matrix{Ptr: src, Type: cublas.Float32, LD: k},
			C: cublas.Matrix{Ptr: dst, Type: cublas.Float32, LD: mOut},
		}
		if err := h.Gemm(g); err != nil {
			return err
		}
		n := uint32(mOut * rows)
		relu := uint32(0)
		if l < layers-1 {
			relu = 1
		}
		if err := m.rt.LaunchKernel(dev, m.fn, cudart.Dim1((n+mlpmodel.BlockSize-1)/mlpmodel.BlockSize), cudart.Dim1(mlpmodel.BlockSize), 0, s,
			cudart.Arg(dst), cudart.Arg(b.w.Add(4*uint64(m.OffB[l]))), cudart.Arg(uint32(mOut)), cudart.Arg(n), cudart.Arg(relu)); err != nil {
			return err
		}
		src, dst = dst, src
	}
	out := uint64(4 * m.Dims[layers] * rows)
	return m.rt.MemcpyAsync(dev, cudart.HostMem(b.out[:out]), cudart.DeviceMem(src, out), cudart.DeviceToHost, s)
}

// run serves one request of rows batch rows in b on s: x fills the input,
// the work is queued (graph g, or call by call when g is 0), the host
// waits for it, and x reads the output.
func (m *model) run(s cudart.Stream, h gemmer, b buffers, rows int, g cudart.GraphExec, x exchange) error {
	if err := x.Fill(b.in); err != nil {
		return err
	}
	if err := capture.Run(m.rt, dev, s, g, func() error { return m.enqueue(s, h, b, rows) }); err != nil {
		return err
	}
	return x.Read(b.out)
}

// capture records enqueue on s into an instantiated graph, counts the
// graph's nodes and launches it once.
func (m *model) capture(s cudart.Stream, h gemmer, b buffers, rows int) (cudart.GraphExec, cudart.GraphNodeCounts, error) {
	xs, counts, err := capture.Instantiate(m.rt, []capture.Stream{{Device: dev, Stream: s}}, func() error { return m.enqueue(s, h, b, rows) })
	if err != nil {
		return 0, nil, err
	}
	// A first launch uploads the graph, and with memory nodes takes its
	// memory: done here, it is no request's and no measurement's.
	if err := errors.Join(m.rt.GraphLaunch(dev, xs[0], s), m.rt.StreamSynchronize(dev, s)); err != nil {
		return 0, nil, errors.Join(err, m.rt.GraphExecDestroy(dev, xs[0]))
	}
	return xs[0], counts[0], nil
}

// captureEach captures a graph on s with h over b for each batch size,
// noting each one's nodes in g.
func (m *model) captureEach(s cudart.Stream, h gemmer, b buffers, batches []int, g *graphNodes) (capture.ByRows, error) {
	return capture.EachBatch(m.rt, dev, batches, func(rows int) (cudart.GraphExec, error) {
		x, counts, err := m.capture(s, h, b, rows)
		if err == nil {
			g.note(rows, counts)
		}
		return x, err
	})
}
