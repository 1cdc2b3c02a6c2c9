package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/examples/capture"
	"github.com/cudapool/cudapool/examples/floats"
	"github.com/cudapool/cudapool/examples/ptxgen"
	"github.com/cudapool/cudapool/pool"
)

// layerPTX is the model's one kernel: a layer that scales each element by
// a weight of the layer (256 of them, shared by every request) and adds
// the layer's bias. Multiply and add round separately (mul.rn, add.rn), so
// the CPU's float32 arithmetic gives the same bits.
//
//	layer(f32 *out, f32 *in, f32 *w, f32 bias, u32 n)   out[i] = w[i%256]*in[i] + bias
var layerPTX = ptxgen.Module(
	ptxgen.Elementwise("layer", "u64 out, u64 in, u64 w, f32 bias, u32 n", 2, "%r1", `
	cvta.to.global.u64 %rd4, %rd1;
	cvta.to.global.u64 %rd5, %rd2;
	cvta.to.global.u64 %rd6, %rd3;
	mul.wide.u32 %rd7, %r5, 4;
	add.s64 %rd8, %rd5, %rd7;
	ld.global.f32 %f2, [%rd8];
	and.b32 %r6, %r5, 255;
	mul.wide.u32 %rd9, %r6, 4;
	add.s64 %rd9, %rd6, %rd9;
	ld.global.f32 %f3, [%rd9];
	mul.rn.f32 %f4, %f3, %f2;
	add.rn.f32 %f5, %f4, %f1;
	add.s64 %rd10, %rd4, %rd7;
	st.global.f32 [%rd10], %f5;`),
)

// weightsPerLayer is how many weights a layer has: element i uses weight
// i%256.
const weightsPerLayer = 256

// blockSize is the threads of one block of every launch.
const blockSize = 256

const dev = 0

// model is the network every backend runs: layers of the layer kernel over
// n floats a batch row, ping-ponging between two device buffers.
type model struct {
	rt      cudart.Full
	n       uint32 // floats a batch row
	layers  int
	mod     cudart.Module
	fn      cudart.Function
	weights []float32 // layers × weightsPerLayer
	bias    []float32 // one a layer
}

// newModel loads the kernel and draws the weights.
func newModel(rt cudart.Full, n uint32, layers int) (*model, error) {
	registerKernel(rt)
	m := &model{rt: rt, n: n, layers: layers, weights: make([]float32, layers*weightsPerLayer), bias: make([]float32, layers)}
	for i := range m.weights {
		// Between 0.5 and 1.5: eight layers neither overflow nor vanish.
		m.weights[i] = 0.5 + float32(i*37%101)/100
	}
	for l := range m.bias {
		m.bias[l] = float32(l%5-2) / 8
	}
	var err error
	if m.mod, err = rt.ModuleLoadData(dev, layerPTX); err != nil {
		return nil, err
	}
	if m.fn, err = rt.ModuleGetFunction(dev, m.mod, "layer"); err != nil {
		return nil, errors.Join(err, rt.ModuleUnload(dev, m.mod))
	}
	return m, nil
}

func (m *model) close() error { return m.rt.ModuleUnload(dev, m.mod) }

// weightBytes is the size of the shared weights.
func (m *model) weightBytes() uint64 { return 4 * uint64(len(m.weights)) }

// rowBytes is the size of one batch row, in or out.
func (m *model) rowBytes() uint64 { return 4 * uint64(m.n) }

// loadWeights copies the weights into w through the pinned staging buffer.
func (m *model) loadWeights(w cudart.DevicePtr, staging []byte) error {
	floats.Put(staging, m.weights)
	return m.rt.Memcpy(dev, cudart.DeviceMem(w, m.weightBytes()), cudart.HostMem(staging), cudart.HostToDevice)
}

// newWeights is a device copy of the weights, taken with cudaMalloc, for
// the backends with no pool.
func (m *model) newWeights() (_ cudart.DevicePtr, err error) {
	w, err := m.rt.Malloc(dev, m.weightBytes())
	if err != nil {
		return 0, err
	}
	staging, err := m.rt.MallocHost(dev, m.weightBytes())
	if err == nil {
		err = errors.Join(m.loadWeights(w, staging), m.rt.FreeHost(staging))
	}
	if err != nil {
		return 0, errors.Join(err, m.rt.Free(dev, w))
	}
	return w, nil
}

// buffers are where one request runs: pinned staging in and out, two
// device activations and the weights.
type buffers struct {
	in, out []byte
	x, y, w cudart.DevicePtr
	// async takes x and y with cudaMallocAsync in each request and gives
	// them back with cudaFreeAsync, in stream order; in a captured graph
	// these are memory nodes.
	async bool
}

// enqueue queues one request of rows batch rows on s: the input in, the
// layers, the output out. Nothing waits.
func (m *model) enqueue(s cudart.Stream, b buffers, rows int) (err error) {
	count := m.n * uint32(rows)
	size := 4 * uint64(count)
	for _, p := range []*cudart.DevicePtr{&b.x, &b.y} {
		if !b.async {
			break
		}
		if *p, err = m.rt.MallocAsync(dev, size, s); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, m.rt.FreeAsync(dev, *p, s)) }()
	}
	if err := m.rt.MemcpyAsync(dev, cudart.DeviceMem(b.x, size), cudart.HostMem(b.in[:size]), cudart.HostToDevice, s); err != nil {
		return err
	}
	grid := cudart.Dim1((count + blockSize - 1) / blockSize)
	src, dst := b.x, b.y
	for l := range m.layers {
		w := b.w.Add(uint64(4 * weightsPerLayer * l))
		if err := m.rt.LaunchKernel(dev, m.fn, grid, cudart.Dim1(blockSize), 0, s,
			cudart.Arg(dst), cudart.Arg(src), cudart.Arg(w), cudart.Arg(m.bias[l]), cudart.Arg(count)); err != nil {
			return err
		}
		src, dst = dst, src
	}
	return m.rt.MemcpyAsync(dev, cudart.HostMem(b.out[:size]), cudart.DeviceMem(src, size), cudart.DeviceToHost, s)
}

// run serves one request of rows batch rows in b on s: x fills the
// input, the work is queued (graph g, or kernel by kernel when g is 0),
// the host waits for it, and x reads the output.
func (m *model) run(s cudart.Stream, b buffers, rows int, g cudart.GraphExec, x exchange) error {
	if m.rowBytes()*uint64(rows) > uint64(len(b.in)) {
		return fmt.Errorf("%w: %d rows, more than the buffers hold", pool.ErrUnknownProfile, rows)
	}
	if err := x.fill(b.in); err != nil {
		return err
	}
	if err := capture.Run(m.rt, dev, s, g, func() error { return m.enqueue(s, b, rows) }); err != nil {
		return err
	}
	return x.read(b.out)
}

// capture records enqueue on s into an instantiated graph.
func (m *model) capture(s cudart.Stream, b buffers, rows int) (cudart.GraphExec, error) {
	xs, _, err := capture.Instantiate(m.rt, []capture.Stream{{Device: dev, Stream: s}}, func() error { return m.enqueue(s, b, rows) })
	if err != nil {
		return 0, err
	}
	return xs[0], nil
}

// captureEach captures a graph on s over b for each batch size.
func (m *model) captureEach(s cudart.Stream, b buffers, batches []int) (capture.ByRows, error) {
	return capture.EachBatch(m.rt, dev, batches, func(rows int) (cudart.GraphExec, error) { return m.capture(s, b, rows) })
}

// layer is the kernel on the CPU: the reference, and the fake's
// implementation.
func layer(w, x, bias float32) float32 { return float32(w*x) + bias }

// reference is the model on the CPU.
func (m *model) reference(in []float32) []float32 {
	x := append([]float32(nil), in...)
	for l := range m.layers {
		w := m.weights[l*weightsPerLayer : (l+1)*weightsPerLayer]
		for i := range x {
			x[i] = layer(w[i%weightsPerLayer], x[i], m.bias[l])
		}
	}
	return x
}

// registerKernel gives the fake a Go implementation of the PTX entry; real
// CUDA runs the PTX.
func registerKernel(rt cudart.Full) {
	f, ok := cudart.As[*cudarttest.Fake](rt)
	if !ok {
		return
	}
	f.RegisterKernel("layer", func(k *cudarttest.KernelContext) error {
		n := int(min(uint64(k.Uint32(4)), k.Threads()))
		in := make([]byte, 4*n)
		w := make([]byte, 4*weightsPerLayer)
		if !k.Read(k.Ptr(1), in) || !k.Read(k.Ptr(2), w) {
			return nil
		}
		x, wv, bias := floats.Of(in), floats.Of(w), k.Float32(3)
		for i := range x {
			x[i] = layer(wv[i%weightsPerLayer], x[i], bias)
		}
		k.Write(k.Ptr(0), floats.Bytes(x))
		return nil
	})
}

// errMismatch is a response that differs from the CPU's.
var errMismatch = errors.New("output differs from the CPU's")

// mismatch says where got and want first differ.
func mismatch(got, want []byte) error {
	for i := 0; i+4 <= len(want); i += 4 {
		if i+4 > len(got) || binary.LittleEndian.Uint32(got[i:]) != binary.LittleEndian.Uint32(want[i:]) {
			return mismatchAt(got, want, i)
		}
	}
	return fmt.Errorf("%w: %d B, want %d B", errMismatch, len(got), len(want))
}

// mismatchAt says that got and want differ at byte offset i, a multiple of 4.
func mismatchAt(got, want []byte, i int) error {
	var g float32
	if i+4 <= len(got) {
		g = math.Float32frombits(binary.LittleEndian.Uint32(got[i:]))
	}
	return fmt.Errorf("%w: element %d is %v, want %v", errMismatch, i/4, g, math.Float32frombits(binary.LittleEndian.Uint32(want[i:])))
}
