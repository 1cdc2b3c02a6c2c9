package main

import (
	"fmt"

	"github.com/cudapool/cudapool/cublas"
)

// shape is one GEMM measured: C (M×N) = A (M×K) · B (K×N), column-major,
// NoTrans both, A, B and C of one type, accumulated in FP32.
type shape struct {
	name    string
	t       cublas.DataType
	m, n, k int
}

// flops is the GEMM's floating-point operations: a multiply and an add per
// product.
func (s shape) flops() float64 { return 2 * float64(s.m) * float64(s.n) * float64(s.k) }

// typeName is the short name of a type in the tables.
func typeName(t cublas.DataType) string {
	switch t {
	case cublas.Float16:
		return "f16"
	case cublas.BFloat16:
		return "bf16"
	}
	return "f32"
}

// mlpLayers are the MLP's layers, 1024 → 4096 → 4096 → 1024: each is a GEMM
// with the layer's weights as A (out × in) and the batch's activations as B
// (in × batch), so M = out, K = in and N = the batch.
var mlpLayers = [][2]int{{1024, 4096}, {4096, 4096}, {4096, 1024}}

// batches are the MLP's batch profiles.
var batches = []int{1, 8, 32}

// shapes lists the GEMMs measured, each dimension but the batch divided by
// scale (at least 1): 4096³ in FP32, FP16 and BF16, then each MLP layer at
// each batch, in FP32. cref/gemm.c lists the same, in the same order.
func shapes(scale int) []shape {
	d := func(x int) int { return max(1, x/scale) }
	var out []shape
	for _, t := range []cublas.DataType{cublas.Float32, cublas.Float16, cublas.BFloat16} {
		out = append(out, shape{"cube." + typeName(t), t, d(4096), d(4096), d(4096)})
	}
	for _, b := range batches {
		for i, l := range mlpLayers {
			out = append(out, shape{fmt.Sprintf("l%d.b%d", i+1, b), cublas.Float32, d(l[1]), b, d(l[0])})
		}
	}
	return out
}
