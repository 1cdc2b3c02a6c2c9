package main

import (
	"math"

	"github.com/cudapool/cudapool/cublas"
)

// The operations between the GEMMs, on one column (one token), as the CPU's
// reference computes them and as the fake runs the kernels. The PTX
// computes the same in another order: its sums are float32 in a tree where
// these are float64 in sequence, and its exponential is ex2.approx. Every
// activation stays float32 but the keys and values the KV cache keeps,
// rounded to FP16: a last-bit difference before a rounding to FP16 flips
// it now and then, and were the GEMMs' inputs rounded too, the flips would
// spread through every GEMM after (reference's doc says how far).

// f16 rounds v to FP16 and back.
func f16(v float32) float32 { return cublas.Float16FromBits(cublas.Float16Bits(v)) }

// loScale is what the low half of an activation is scaled by before it is
// rounded to FP16 (split), and its GEMM's alpha by 1/loScale: 2^11 keeps it
// off FP16's subnormals for activations down to about 2^-13.
const loScale = 2048

// split is v as the GEMMs read it, two FP16 values: hi, v rounded to FP16,
// and lo, what hi misses scaled by loScale, rounded to FP16. hi +
// lo/loScale is v within 2^-23 of |v| (for |v| from about 2^-13 to 2^15),
// so that FP16 GEMMs, one over the his and one over the los, multiply by
// the float32 activations, as exactly as a float32 GEMM. v - hi is exact in
// float32, and the scaling too.
func split(v float32) (hi, lo float32) {
	hi = f16(v)
	return hi, f16((v - hi) * loScale)
}

// embedOne is x = emb[:, token] + pos[:, position], each FP16, added in
// float32.
func embedOne(x, emb, pos []float32) {
	for i := range x {
		x[i] = emb[i] + pos[i]
	}
}

// rmsNorm writes x / sqrt(mean(x²) + eps) × gain into out, in float32.
func rmsNorm(out, x, gain []float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := float32(1 / math.Sqrt(ss/float64(len(x))+rmsEps))
	for i, v := range x {
		out[i] = v * inv * gain[i]
	}
}

// attend is one head's attention for one query at position n-1 over the
// keys and values of positions 0..n-1 (k and v hold n × headDim FP16
// values, a position after another): softmax(q·k × scale) · v, into out.
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
		out[d] = float32(acc / sum)
	}
}

// relu is max(v, 0), 0 for NaN as PTX's max.f32 gives.
func relu(v float32) float32 {
	if v > 0 {
		return v
	}
	return 0
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
