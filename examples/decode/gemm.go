package main

import (
	"fmt"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
)

// The projections: FP16 weights times float32 activations held as two FP16
// halves (ops.go's split), in two cuBLAS GEMMs each, over a few column
// counts that a warm-up runs before the measured runs.

// halves is where a float32 activation that a GEMM reads is kept, as its
// two FP16 halves (split): hi, and lo scaled by loScale, each a matrix of
// the same shape.
type halves struct{ hi, lo cudart.DevicePtr }

// gemmCols is the columns a GEMM over n rows runs on, of at most most: n
// rounded up to a power of 2 up to 128, then to a multiple of 128, so that
// the GEMMs of every step have one of a few shapes, each run once before
// the measured runs (warmGEMMs), as vLLM pads a batch to a size it has
// captured. The columns past n hold what the buffers held (zeros, or an
// earlier step's activations) and their results are never read: a GEMM's
// columns do not mix.
func gemmCols(n, most int) int {
	c := 1
	for c < min(n, 128) {
		c *= 2
	}
	if n > 128 {
		c = (n + 127) / 128 * 128
	}
	return min(c, most)
}

// colCounts are the values gemmCols takes for 1 to most rows.
func colCounts(most int) []int {
	var out []int
	for n := 1; n <= most; n++ {
		if c := gemmCols(n, most); len(out) == 0 || c != out[len(out)-1] {
			out = append(out, c)
		}
	}
	return out
}

// warmGEMMs queues every GEMM a step may queue, one layer's projections
// (the layers' are of the same shapes) at each column count gemmCols gives
// and the logits' at each count of sampled rows, and waits for them: cuBLAS
// then has loaded every kernel the runs use, which CUDA loads at its first
// launch, taking device memory that would show as taken during a run. They
// read the activation buffers as they are and write outputs the steps
// overwrite.
func (e *engine) warmGEMMs() error {
	lt := e.w.layers[0]
	for _, c := range colCounts(e.maxRows) {
		for _, p := range []struct {
			t    tensor
			b    halves
			out  cudart.DevicePtr
			beta float32
		}{{lt.qkv, e.h, e.qkv, 0}, {lt.wo, e.att, e.x, 1}, {lt.w1, e.h, e.ff, 0}, {lt.w2, e.g, e.x, 1}} {
			if err := e.project(p.t, p.b, p.out, c, p.beta); err != nil {
				return fmt.Errorf("warm-up, %d columns: %w", c, err)
			}
		}
	}
	for _, c := range colCounts(e.maxSample) {
		if err := e.logitsOf(c); err != nil {
			return fmt.Errorf("warm-up, logits of %d rows: %w", c, err)
		}
	}
	return e.rt.StreamSynchronize(dev, e.st)
}

// project queues C = W × B (+ C when beta is 1): W the tensor t (FP16,
// rows × cols), B the cols × n float32 activations b holds, C rows × n
// FP32.
func (e *engine) project(t tensor, b halves, c cudart.DevicePtr, n int, beta float32) error {
	return e.gemmSplit(cublas.Gemm{
		TransA: cublas.NoTrans, TransB: cublas.NoTrans, M: t.rows, N: n, K: t.cols, Alpha: 1, Beta: beta,
		A: cublas.Matrix{Ptr: e.ptr(t), Type: cublas.Float16, LD: t.rows},
		B: cublas.Matrix{Type: cublas.Float16, LD: t.cols},
		C: cublas.Matrix{Ptr: c, Type: cublas.Float32, LD: t.rows},
	}, b)
}

// logitsOf queues the logits of the first ns columns of the normed
// activations: the embedding's transpose times them, scaled by lmScale.
func (e *engine) logitsOf(ns int) error {
	s := e.s
	return e.gemmSplit(cublas.Gemm{
		TransA: cublas.Trans, TransB: cublas.NoTrans, M: s.vocab, N: ns, K: s.width, Alpha: lmScale(s),
		A: cublas.Matrix{Ptr: e.ptr(e.w.emb), Type: cublas.Float16, LD: s.width},
		B: cublas.Matrix{Type: cublas.Float16, LD: s.width},
		C: cublas.Matrix{Ptr: e.logits, Type: cublas.Float32, LD: s.vocab},
	}, e.h)
}

// gemmSplit queues g with B the float32 activations b holds: g over b's
// high halves, then g over its low ones, alpha divided by loScale, added
// to C. Both are FP16 GEMMs accumulating in FP32: together they multiply
// by the float32 activations, not by their FP16 roundings.
func (e *engine) gemmSplit(g cublas.Gemm, b halves) error {
	g.B.Ptr = b.hi
	if err := e.blas.Gemm(g); err != nil {
		return err
	}
	g.B.Ptr, g.Alpha, g.Beta = b.lo, g.Alpha/loScale, 1
	return e.blas.Gemm(g)
}
