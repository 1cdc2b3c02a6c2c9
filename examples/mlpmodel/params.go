package mlpmodel

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// Layers is the number of layers.
const Layers = 3

// FullDims are the MLP's widths, input to output: 1024 → 4096 → 4096 →
// 1024.
var FullDims = [Layers + 1]int{1024, 4096, 4096, 1024}

// Scaled is FullDims with every width divided by scale.
func Scaled(scale int) [Layers + 1]int {
	var d [Layers + 1]int
	for i, w := range FullDims {
		d[i] = w / scale
	}
	return d
}

// Params are the model's parameters in one slice, as one device buffer
// holds them: W1 b1 W2 b2 W3 b3, each W column-major (outputs × inputs:
// element (i, j) at i + j·outputs). Layer l computes act(W_l·x + b_l),
// act being ReLU after the first two layers and none after the last.
type Params struct {
	Dims   [Layers + 1]int
	Values []float32
	OffW   [Layers]int // float offsets of each layer's W and b in Values
	OffB   [Layers]int
}

// New draws the parameters of a model of widths dims from seed: a PCG
// (math/rand/v2, seeded with seed and 0x6d6c70) drawn in Values' order,
// W_l's elements uniform in [-a, a) with a = sqrt(6/inputs) (He's scaling,
// which keeps activations O(1) through ReLU layers), then b_l's uniform in
// [-0.1, 0.1).
func New(dims [Layers + 1]int, seed uint64) *Params {
	p := &Params{Dims: dims}
	n := 0
	for l := range Layers {
		p.OffW[l] = n
		n += dims[l+1] * dims[l]
		p.OffB[l] = n
		n += dims[l+1]
	}
	r := rand.New(rand.NewPCG(seed, 0x6d6c70))
	p.Values = make([]float32, 0, n)
	for l := range Layers {
		a := math.Sqrt(6 / float64(dims[l]))
		for range dims[l+1] * dims[l] {
			p.Values = append(p.Values, float32((2*r.Float64()-1)*a))
		}
		for range dims[l+1] {
			p.Values = append(p.Values, float32((2*r.Float64()-1)*0.1))
		}
	}
	return p
}

// W is layer l's weights, column-major, Dims[l+1] rows by Dims[l] columns.
func (p *Params) W(l int) []float32 {
	return p.Values[p.OffW[l] : p.OffW[l]+p.Dims[l+1]*p.Dims[l]]
}

// B is layer l's bias, Dims[l+1] values.
func (p *Params) B(l int) []float32 { return p.Values[p.OffB[l] : p.OffB[l]+p.Dims[l+1]] }

// Bytes is the parameters' size.
func (p *Params) Bytes() uint64 { return 4 * uint64(len(p.Values)) }

// Widest is the widest layer's width: the activations' rows.
func (p *Params) Widest() int { return max(p.Dims[0], p.Dims[1], p.Dims[2], p.Dims[3]) }

// Inputs are variants batches of rows columns of dims[0] floats, uniform in
// [-1, 1), from a PCG seeded with seed and the batch size.
func Inputs(dims [Layers + 1]int, seed uint64, rows, variants int) [][]float32 {
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

// BiasAct is bias_act on one element: the CPU's reference, and the fake's
// implementation of the kernel.
func BiasAct(y, bias float32, relu bool) float32 {
	v := y + bias
	if relu && v < 0 {
		return 0
	}
	return v
}

// Reference is the model on the CPU for a batch of rows columns: each
// GEMM in float64, summed over the inputs in order and rounded once to
// float32 (as the fake's cuBLAS computes it; CUDA's sums differ within
// cuBLAS's documented bound), then BiasAct in float32. The layers' outputs
// are split among the CPU's cores.
func (p *Params) Reference(in []float32, rows int) []float32 {
	x := in
	for l := range Layers {
		k, mOut := p.Dims[l], p.Dims[l+1]
		w, bias := p.W(l), p.B(l)
		y := make([]float32, mOut*rows)
		parts := max(1, min(runtime.GOMAXPROCS(0), mOut/64))
		var wg sync.WaitGroup
		for part := range parts {
			lo, hi := part*mOut/parts, (part+1)*mOut/parts
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
						y[lo+i+r*mOut] = BiasAct(float32(v), bias[lo+i], l < Layers-1)
					}
				}
			}()
		}
		wg.Wait()
		x = y
	}
	return x
}
