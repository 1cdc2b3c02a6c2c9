package main

import (
	"math"

	"github.com/cudapool/cudapool/cublas"
)

// The operations between the GEMMs, on one column (one token), as the CPU's
// reference computes them and as the fake runs the kernels. The PTX
// computes the same in another order: its sums are float32 in a tree where
// these are float64 in sequence, and its exponential is ex2.approx. Those
// last-bit differences flip an FP16 rounding now and then, and the flips
// spread through the GEMMs (reference's doc says how far; the check's
// report measures it).

// f16 rounds v to FP16 and back.
func f16(v float32) float32 { return cublas.Float16FromBits(cublas.Float16Bits(v)) }

// embedOne is x = emb[:, token] + pos[:, position], each FP16, added in
// float32.
func embedOne(x, emb, pos []float32) {
	for i := range x {
		x[i] = emb[i] + pos[i]
	}
}

// rmsNorm writes x / sqrt(mean(x²) + eps) × gain into out, rounded to FP16.
func rmsNorm(out, x, gain []float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := float32(1 / math.Sqrt(ss/float64(len(x))+rmsEps))
	for i, v := range x {
		out[i] = f16(v * inv * gain[i])
	}
}

// attend is one head's attention for one query at position n-1 over the
// keys and values of positions 0..n-1 (k and v hold n × headDim FP16
// values, a position after another): softmax(q·k × scale) · v, rounded to
// FP16 into out.
func attend(out, q, k, v []float32, n int, scale float32, scores []float64) {
	best := math.Inf(-1)
	for t := range n {
		var s float64
		kt := k[t*headDim : (t+1)*headDim]
		for d, qd := range q {
			s += float64(qd*scale) * float64(kt[d])
		}
		scores[t] = s
		best = max(best, s)
	}
	var sum float64
	for t := range n {
		scores[t] = math.Exp(scores[t] - best)
		sum += scores[t]
	}
	for d := range out {
		var acc float64
		for t := range n {
			acc += scores[t] * float64(v[t*headDim+d])
		}
		out[d] = f16(float32(acc / sum))
	}
}

// reluF16 is max(v, 0) rounded to FP16.
func reluF16(v float32) float32 {
	if v < 0 {
		return 0
	}
	return f16(v)
}

// argmax is the index of the largest of v, the first of equals; NaN is
// never the largest. -1 if every value is NaN or -Inf.
func argmax(v []float32) int {
	best, at := float32(math.Inf(-1)), -1
	for i, x := range v {
		if x > best {
			best, at = x, i
		}
	}
	return at
}

// topTwo are the largest of v and the next.
func topTwo(v []float32) (first, second float32) {
	first, second = float32(math.Inf(-1)), float32(math.Inf(-1))
	for _, x := range v {
		switch {
		case x > first:
			first, second = x, first
		case x > second:
			second = x
		}
	}
	return first, second
}
