package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/cudapool/cudapool/cublas"
)

// headDim is every attention head's width: the attention kernel gives
// each lane of a warp two of its 64 elements.
const headDim = 64

// pageTokens is the tokens of one KV page (vLLM's block size).
const pageTokens = 16

// rmsEps is RMSNorm's epsilon.
const rmsEps = 1e-5

// shape is the model's size.
type shape struct {
	layers  int // transformer blocks
	width   int // model width D
	heads   int // query heads H, of headDim each: D = H × headDim
	kvHeads int // key/value heads G (grouped-query attention: H/G query heads share one)
	ffn     int // the feed-forward layer's width F
	vocab   int // tokens V
	ctx     int // the most tokens a sequence holds: the learned positions, and what the baseline reserves
}

// The size, run on a GPU, and the fake's default.
var (
	fullShape  = shape{layers: 4, width: 1024, heads: 16, kvHeads: 4, ffn: 4096, vocab: 32000, ctx: 2048}
	smallShape = shape{layers: 2, width: 128, heads: 2, kvHeads: 1, ffn: 256, vocab: 256, ctx: 256}
)

func (s shape) qDim() int  { return s.heads * headDim }
func (s shape) kvDim() int { return s.kvHeads * headDim }

// qkvRows is the fused projection's outputs: Q, then K, then V.
func (s shape) qkvRows() int { return s.qDim() + 2*s.kvDim() }

func (s shape) check() error {
	switch {
	case s.layers < 1 || s.width < 1 || s.heads < 1 || s.kvHeads < 1 || s.ffn < 1 || s.vocab < 2 || s.ctx < 2*pageTokens:
		return fmt.Errorf("every size must be positive, -vocab at least 2, -ctx at least %d", 2*pageTokens)
	case s.width != s.heads*headDim:
		return fmt.Errorf("-width %d must be -heads × %d (%d)", s.width, headDim, s.heads*headDim)
	case s.heads%s.kvHeads != 0:
		return fmt.Errorf("-heads %d must be a multiple of -kvheads %d", s.heads, s.kvHeads)
	case s.ctx%pageTokens != 0:
		return fmt.Errorf("-ctx %d must be a multiple of %d, the tokens of a page", s.ctx, pageTokens)
	case s.vocab > 1<<24 || s.width > 1<<16 || s.ffn > 1<<18 || s.ctx > 1<<16:
		return fmt.Errorf("-vocab at most %d, -width %d, -ffn %d, -ctx %d", 1<<24, 1<<16, 1<<18, 1<<16)
	}
	return nil
}

func (s shape) String() string {
	return fmt.Sprintf("%d layers, width %d, %d heads of %d (%d KV heads), FFN %d, vocabulary %d, context %d",
		s.layers, s.width, s.heads, headDim, s.kvHeads, s.ffn, s.vocab, s.ctx)
}

// tensor is one weight: its place in the weights (elements from the
// start) and its column-major shape, rows × cols.
type tensor struct {
	name       string
	off        int
	rows, cols int
}

func (t tensor) size() int { return t.rows * t.cols }

// layerTensors are one block's weights.
type layerTensors struct {
	attnNorm, qkv, wo, ffnNorm, w1, w2 tensor
}

// weights are the model's parameters as FP16 bits, one buffer as on the
// device, and as float32 for the CPU's reference.
type weights struct {
	s         shape
	bits      []uint16
	f32       []float32
	emb, pos  tensor // emb: D × V (a column a token), also the output projection (tied); pos: D × ctx
	layers    []layerTensors
	finalNorm tensor
	all       []tensor // in the order drawn and laid out
}

// tensorAlign is each tensor's alignment in elements: 256 B, as cuBLAS's
// fastest kernels want their operands.
const tensorAlign = 128

// newWeights draws the parameters from seed: a PCG (math/rand/v2, seeded
// with seed and 0x6465636f6465) draws the tensors in the order listed by
// layout, each in its column-major order: embeddings and positions uniform
// in [-1, 1); each norm's gains uniform in [0.8, 1.2); each projection
// uniform in [-a, a) with a = sqrt(3/inputs), which keeps its outputs' variance
// near its inputs'. Each value is rounded to FP16 (to nearest even).
func newWeights(s shape, seed uint64) *weights {
	w := &weights{s: s}
	n := 0
	add := func(name string, rows, cols int) tensor {
		t := tensor{name: name, off: n, rows: rows, cols: cols}
		n += (t.size() + tensorAlign - 1) / tensorAlign * tensorAlign
		w.all = append(w.all, t)
		return t
	}
	w.emb = add("embedding", s.width, s.vocab)
	w.pos = add("positions", s.width, s.ctx)
	for l := range s.layers {
		p := fmt.Sprintf("layer%d.", l)
		w.layers = append(w.layers, layerTensors{
			attnNorm: add(p+"attn_norm", s.width, 1),
			qkv:      add(p+"qkv", s.qkvRows(), s.width),
			wo:       add(p+"wo", s.width, s.qDim()),
			ffnNorm:  add(p+"ffn_norm", s.width, 1),
			w1:       add(p+"w1", s.ffn, s.width),
			w2:       add(p+"w2", s.width, s.ffn),
		})
	}
	w.finalNorm = add("final_norm", s.width, 1)
	w.bits = make([]uint16, n)
	w.f32 = make([]float32, n)
	r := rand.New(rand.NewPCG(seed, 0x6465636f6465))
	for _, t := range w.all {
		lo, hi := -1.0, 1.0
		switch {
		case t.cols == 1:
			lo, hi = 0.8, 1.2
		case t != w.emb && t != w.pos:
			a := math.Sqrt(3 / float64(t.cols))
			lo, hi = -a, a
		}
		for i := range t.size() {
			b := cublas.Float16Bits(float32(lo + (hi-lo)*r.Float64()))
			w.bits[t.off+i] = b
			w.f32[t.off+i] = cublas.Float16FromBits(b)
		}
	}
	return w
}

// of is t's values as float32.
func (w *weights) of(t tensor) []float32 { return w.f32[t.off : t.off+t.size()] }

// bytes is the weights as the device holds them.
func (w *weights) bytes() []byte { return halfBytes(w.bits) }

// halfBytes is v, FP16 bits, as little-endian bytes.
func halfBytes(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}

// int32Bytes is v as little-endian bytes.
func int32Bytes(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}
