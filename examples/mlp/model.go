package main

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// biasPTX is the kernel that follows each layer's GEMM: it adds the layer's
// bias to every column of the layer's output, in place, and with relu set
// clamps it at 0. The add rounds once (add.rn), as float32 addition does on
// the CPU.
//
//	bias_act(f32 *y, f32 *bias, u32 rows, u32 n, u32 relu)   y[i] = act(y[i] + bias[i%rows])
const biasPTX = `
.version 8.0
.target sm_80
.address_size 64

.visible .entry bias_act(.param .u64 y, .param .u64 bias, .param .u32 rows, .param .u32 n, .param .u32 relu)
{
	.reg .pred %p<3>;
	.reg .b32 %r<9>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<9>;
	ld.param.u64 %rd1, [y];
	ld.param.u64 %rd2, [bias];
	ld.param.u32 %r1, [rows];
	ld.param.u32 %r2, [n];
	ld.param.u32 %r3, [relu];
	mov.u32 %r4, %ctaid.x;
	mov.u32 %r5, %ntid.x;
	mov.u32 %r6, %tid.x;
	mad.lo.s32 %r7, %r4, %r5, %r6;
	setp.ge.u32 %p1, %r7, %r2;
	@%p1 bra $L_bias_done;
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
	setp.ne.u32 %p2, %r3, 0;
	@%p2 max.f32 %f3, %f3, 0f00000000;
	st.global.f32 [%rd6], %f3;
$L_bias_done:
	ret;
}
`

// blockSize is the threads of one block of every bias_act launch.
const blockSize = 256

const dev = 0

// fullDims are the MLP's widths, input to output: three layers.
var fullDims = [4]int{1024, 4096, 4096, 1024}

// model is the MLP every backend runs: three layers, each a GEMM of its
// weights (A, outputs × inputs) by the batch's activations (B, inputs ×
// batch, a column a request row), then bias_act; ReLU after the first two.
// Its parameters lie in one buffer, as on the device: W1 b1 W2 b2 W3 b3,
// each W column-major.
type model struct {
	rt     cudart.Full
	dims   [4]int
	params []float32
	offW   [3]int // float offsets of each layer's W and b in params
	offB   [3]int
	mod    cudart.Module
	fn     cudart.Function
}

// layers is the number of layers.
const layers = 3

// newModel draws the parameters from seed (see weights) and loads the
// kernel.
func newModel(rt cudart.Full, dims [4]int, seed uint64) (*model, error) {
	registerKernel(rt)
	m := &model{rt: rt, dims: dims}
	n := 0
	for l := range layers {
		m.offW[l] = n
		n += dims[l+1] * dims[l]
		m.offB[l] = n
		n += dims[l+1]
	}
	m.params = weights(dims, seed, n)
	var err error
	if m.mod, err = rt.ModuleLoadData(dev, biasPTX); err != nil {
		return nil, err
	}
	if m.fn, err = rt.ModuleGetFunction(dev, m.mod, "bias_act"); err != nil {
		return nil, errors.Join(err, rt.ModuleUnload(dev, m.mod))
	}
	return m, nil
}

// weights are the parameters, laid out as model.params: a PCG
// (math/rand/v2, seeded with seed and 0x6d6c70) drawn in that order, W_l's
// elements uniform in [-a, a) with a = sqrt(6/inputs) (He's scaling, which
// keeps activations O(1) through ReLU layers), then b_l's uniform in
// [-0.1, 0.1).
func weights(dims [4]int, seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x6d6c70))
	out := make([]float32, 0, n)
	for l := range layers {
		a := math.Sqrt(6 / float64(dims[l]))
		for range dims[l+1] * dims[l] {
			out = append(out, float32((2*r.Float64()-1)*a))
		}
		for range dims[l+1] {
			out = append(out, float32((2*r.Float64()-1)*0.1))
		}
	}
	return out
}

// inputs are variants batches of rows columns of dims[0] floats, uniform in
// [-1, 1), from a PCG seeded with seed and the batch size.
func inputs(dims [4]int, seed uint64, rows, variants int) [][]float32 {
	r := rand.New(rand.NewPCG(seed, uint64(rows)))
	out := make([][]float32, variants)
	for v := range out {
		out[v] = make([]float32, dims[0]*rows)
		for i := range out[v] {
			out[v][i] = float32(2*r.Float64() - 1)
		}
	}
	return out
}

func (m *model) close() error { return m.rt.ModuleUnload(dev, m.mod) }

// paramBytes is the size of the parameters, which every request reads.
func (m *model) paramBytes() uint64 { return 4 * uint64(len(m.params)) }

// widest is the widest layer's width: the activations' rows.
func (m *model) widest() int { return max(m.dims[0], m.dims[1], m.dims[2], m.dims[3]) }

// actBytes is the size of one activation buffer at rows batch rows.
func (m *model) actBytes(rows int) uint64 { return 4 * uint64(m.widest()*rows) }

// loadParams copies the parameters to p.
func (m *model) loadParams(p cudart.DevicePtr) error {
	b := floatBytes(m.params)
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
	in := uint64(4 * m.dims[0] * rows)
	if err := m.rt.MemcpyAsync(dev, cudart.DeviceMem(b.x, in), cudart.HostMem(b.in[:in]), cudart.HostToDevice, s); err != nil {
		return err
	}
	src, dst := b.x, b.y
	for l := range layers {
		k, mOut := m.dims[l], m.dims[l+1]
		g := cublas.Gemm{
			TransA: cublas.NoTrans, TransB: cublas.NoTrans, M: mOut, N: rows, K: k, Alpha: 1,
			A: cublas.Matrix{Ptr: b.w.Add(4 * uint64(m.offW[l])), Type: cublas.Float32, LD: mOut},
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
		if err := m.rt.LaunchKernel(dev, m.fn, cudart.Dim1((n+blockSize-1)/blockSize), cudart.Dim1(blockSize), 0, s,
			cudart.ArgPtr(dst), cudart.ArgPtr(b.w.Add(4*uint64(m.offB[l]))), cudart.ArgUint32(uint32(mOut)), cudart.ArgUint32(n), cudart.ArgUint32(relu)); err != nil {
			return err
		}
		src, dst = dst, src
	}
	out := uint64(4 * m.dims[layers] * rows)
	return m.rt.MemcpyAsync(dev, cudart.HostMem(b.out[:out]), cudart.DeviceMem(src, out), cudart.DeviceToHost, s)
}

// run serves one request of rows batch rows in b on s: x fills the input,
// the work is queued (graph g, or call by call when g is 0), the host
// waits for it, and x reads the output.
func (m *model) run(s cudart.Stream, h gemmer, b buffers, rows int, g cudart.GraphExec, x exchange) error {
	if err := x.fill(b.in); err != nil {
		return err
	}
	var err error
	if g != 0 {
		err = m.rt.GraphLaunch(dev, g, s)
	} else {
		err = m.enqueue(s, h, b, rows)
	}
	if err != nil {
		return err
	}
	if err := m.rt.StreamSynchronize(dev, s); err != nil {
		return err
	}
	return x.read(b.out)
}

// capture records enqueue on s into an instantiated graph, counts the
// graph's nodes and launches it once. The capture is thread-local, so other goroutines' CUDA
// calls go on meanwhile, and must end on the thread that began it.
func (m *model) capture(s cudart.Stream, h gemmer, b buffers, rows int) (cudart.GraphExec, cudart.GraphNodeCounts, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := m.rt.StreamBeginCapture(dev, s, cudart.CaptureModeThreadLocal); err != nil {
		return 0, nil, err
	}
	recErr := m.enqueue(s, h, b, rows)
	g, err := m.rt.StreamEndCapture(dev, s)
	if recErr != nil || err != nil {
		if err == nil {
			err = m.rt.GraphDestroy(dev, g)
		}
		return 0, nil, errors.Join(recErr, err)
	}
	nodes, err := cudart.CountGraphNodes(m.rt, dev, g)
	if err != nil {
		return 0, nil, errors.Join(err, m.rt.GraphDestroy(dev, g))
	}
	x, err := m.rt.GraphInstantiate(dev, g)
	if err = errors.Join(err, m.rt.GraphDestroy(dev, g)); err != nil {
		return 0, nil, err
	}
	// A first launch uploads the graph, and with memory nodes takes its
	// memory: done here, it is no request's and no measurement's.
	if err := errors.Join(m.rt.GraphLaunch(dev, x, s), m.rt.StreamSynchronize(dev, s)); err != nil {
		return 0, nil, errors.Join(err, m.rt.GraphExecDestroy(dev, x))
	}
	return x, nodes, nil
}

// biasAct is bias_act on one element: the CPU's reference, and the fake's
// implementation.
func biasAct(y, bias float32, relu bool) float32 {
	v := y + bias
	if relu && v < 0 {
		return 0
	}
	return v
}

// reference is the model on the CPU for a batch of rows columns: each
// GEMM in float64, summed over the inputs in order and rounded once to
// float32 (as the fake's cuBLAS computes it; CUDA's sums differ within
// cuBLAS's documented bound), then bias_act in float32. The layers'
// outputs are split among the CPU's cores.
func (m *model) reference(in []float32, rows int) []float32 {
	x := in
	for l := range layers {
		k, mOut := m.dims[l], m.dims[l+1]
		w := m.params[m.offW[l] : m.offW[l]+mOut*k]
		bias := m.params[m.offB[l] : m.offB[l]+mOut]
		y := make([]float32, mOut*rows)
		parts := min(runtime.GOMAXPROCS(0), mOut/64)
		var wg sync.WaitGroup
		for p := range parts {
			lo, hi := p*mOut/parts, (p+1)*mOut/parts
			wg.Add(1)
			go func() {
				defer wg.Done()
				acc := make([]float64, hi-lo)
				for r := range rows {
					clear(acc)
					for j := range k {
						xj := float64(x[j+r*k])
						if xj == 0 {
							continue
						}
						col := w[j*mOut+lo : j*mOut+hi]
						for i, a := range col {
							acc[i] += float64(a) * xj
						}
					}
					for i, v := range acc {
						y[lo+i+r*mOut] = biasAct(float32(v), bias[lo+i], l < layers-1)
					}
				}
			}()
		}
		wg.Wait()
		x = y
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
	f.RegisterKernel("bias_act", func(k *cudarttest.KernelContext) error {
		rows := int(k.Uint32(2))
		n := int(min(uint64(k.Uint32(3)), k.Threads()))
		if rows == 0 || n == 0 {
			return nil
		}
		y, bias := make([]byte, 4*n), make([]byte, 4*min(rows, n))
		if !k.Read(k.Ptr(0), y) || !k.Read(k.Ptr(1), bias) {
			return nil
		}
		relu := k.Uint32(4) != 0
		for i := range n {
			v := math.Float32frombits(binary.LittleEndian.Uint32(y[4*i:]))
			b := math.Float32frombits(binary.LittleEndian.Uint32(bias[4*(i%rows):]))
			binary.LittleEndian.PutUint32(y[4*i:], math.Float32bits(biasAct(v, b, relu)))
		}
		k.Write(k.Ptr(0), y)
		return nil
	})
}

// putFloats writes v into b, little-endian, as the GPU reads it.
func putFloats(b []byte, v []float32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
}

// floatBytes is v as bytes.
func floatBytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	putFloats(b, v)
	return b
}

// floatsOf is b, little-endian float32s, as floats.
func floatsOf(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
