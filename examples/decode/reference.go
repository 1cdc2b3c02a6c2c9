package main

import (
	"runtime"
	"sync"
)

// refSeq is one sequence on the CPU: its keys and values in FP16 values,
// contiguous, a layer each (positions × kvdim).
type refSeq struct {
	k, v [][]float32
	n    int
}

func (s *refSeq) clone() *refSeq {
	c := &refSeq{n: s.n}
	for l := range s.k {
		c.k = append(c.k, append([]float32(nil), s.k[l]...))
		c.v = append(c.v, append([]float32(nil), s.v[l]...))
	}
	return c
}

// reference is the model on the CPU, token by token: the same operations
// as the device (ops.go), each GEMM as a float64 sum over its inputs in
// order rounded once to float32 (as the fake's cuBLAS computes it; CUDA's
// sums differ within cuBLAS's documented bound). Every activation is
// float32 but the keys and values, rounded to FP16 as the KV cache keeps
// them: activations lists them, as the dump's manifest does, and observe,
// when set, is given each as it is made.
//
// The device holds each GEMM's float32 input as two FP16 halves (split)
// and runs two FP16 GEMMs; the reference multiplies the float32 values.
// The two agree to about float32's precision. Were the GEMMs' inputs
// rounded to FP16 (both computations rounding at the same points), they
// would not agree so well: a last-bit difference before a rounding flips
// it now and then, a flipped input moves every output of the next GEMM,
// and after a few layers most FP16 activations differ by an ulp, which
// puts a logit here and there past the tolerance (at the size, 5
// of 2,048,000 on an H200, and as many between two CPU recomputations).
//
// With sum32 each GEMM (the logits' too) is summed in float32 instead, 32
// products at a time and those blocks in order, as a GPU's GEMM may: a
// second recomputation, as exact as the first within FP32, whose distance
// from it is the spread any two FP32 implementations of this model show.
type reference struct {
	w       *weights
	sum32   bool
	observe func(name string, v []float32)
}

// activation is one of a step's activations, as the dump's manifest names
// it.
type activation struct {
	name string
	fp16 bool // rounded to FP16 (to nearest even) where it is made; else float32
	what string
}

// activations are a token's activations in the order the model makes them
// (those of a layer once a layer); only the keys and values are FP16.
var activations = []activation{
	{"x", false, "the residual stream: embedding[:, t_p] + positions[:, p], then after each layer's attention and FFN, x + its output"},
	{"attn_in", false, "rmsnorm(x) * attn_norm"},
	{"qkv", false, "qkv_w @ attn_in: Q (heads*64 rows, head i at rows 64i..64i+63), then K and V (kv_heads*64 rows each)"},
	{"k", true, "the keys, as the KV cache keeps them for this position and the ones after"},
	{"v", true, "the values, likewise"},
	{"attn_out", false, "for each head i, with g = i / (heads / kv_heads): softmax_{s<=p}(q_i . k_g[s] * attention_scale) . v_g[s]"},
	{"ffn_in", false, "rmsnorm(x) * ffn_norm, x after the attention's wo @ attn_out is added"},
	{"ffn_hidden", false, "relu(w1 @ ffn_in); x + w2 @ ffn_hidden is the next x"},
	{"final_in", false, "rmsnorm(x) * final_norm, after the last layer"},
	{"logits", false, "(embedding^T @ final_in) * output_scale"},
}

func (r reference) see(name string, v []float32) {
	if r.observe != nil {
		r.observe(name, v)
	}
}

func newRefSeq(s shape) *refSeq {
	return &refSeq{k: make([][]float32, s.layers), v: make([][]float32, s.layers)}
}

// forward feeds token at the sequence's next position and, with logits
// not nil, writes the logits of the token after it.
func (r reference) forward(seq *refSeq, token int32, logits []float32) {
	w, s := r.w, r.w.s
	pos := seq.n
	x := make([]float32, s.width)
	emb, posT := w.of(w.emb), w.of(w.pos)
	embedOne(x, emb[int(token)*s.width:(int(token)+1)*s.width], posT[pos*s.width:(pos+1)*s.width])
	r.see("x", x)
	h := make([]float32, s.width)
	qkv := make([]float32, s.qkvRows())
	att := make([]float32, s.qDim())
	f := make([]float32, s.ffn)
	acc := make([]float64, max(s.qkvRows(), s.ffn, s.width))
	scores := make([]float64, pos+1)
	qd, kvd := s.qDim(), s.kvDim()
	for l, lt := range w.layers {
		rmsNorm(h, x, w.of(lt.attnNorm))
		r.see("attn_in", h)
		r.gemv(lt.qkv, h, acc)
		for i := range qkv {
			qkv[i] = float32(acc[i])
		}
		r.see("qkv", qkv)
		for i := range kvd {
			seq.k[l] = append(seq.k[l], f16(qkv[qd+i]))
			seq.v[l] = append(seq.v[l], f16(qkv[qd+kvd+i]))
		}
		r.see("k", seq.k[l][pos*kvd:])
		r.see("v", seq.v[l][pos*kvd:])
		for hd := range s.heads {
			g := hd / (s.heads / s.kvHeads)
			attend(att[hd*headDim:(hd+1)*headDim], qkv[hd*headDim:(hd+1)*headDim],
				headOf(seq.k[l], pos+1, kvd, g), headOf(seq.v[l], pos+1, kvd, g), pos+1, attnScale, scores)
		}
		r.see("attn_out", att)
		r.gemv(lt.wo, att, acc)
		for i := range x {
			x[i] = float32(acc[i] + float64(x[i]))
		}
		r.see("x", x)
		rmsNorm(h, x, w.of(lt.ffnNorm))
		r.see("ffn_in", h)
		r.gemv(lt.w1, h, acc)
		for i := range f {
			f[i] = relu(float32(acc[i]))
		}
		r.see("ffn_hidden", f)
		r.gemv(lt.w2, f, acc)
		for i := range x {
			x[i] = float32(acc[i] + float64(x[i]))
		}
		r.see("x", x)
	}
	seq.n++
	if logits == nil {
		return
	}
	rmsNorm(h, x, w.of(w.finalNorm))
	r.see("final_in", h)
	alpha := float64(lmScale(s))
	parallel(s.vocab, s.vocab*s.width, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			col := emb[t*s.width : (t+1)*s.width]
			if r.sum32 {
				logits[t] = lmScale(s) * dot32(col, h)
				continue
			}
			var a float64
			for d, e := range col {
				a += float64(e) * float64(h[d])
			}
			logits[t] = float32(alpha * a)
		}
	})
	r.see("logits", logits)
}

// gemv is acc[:t.rows] = t × x, column-major t, summed over the columns in
// order (in float32 32 columns at a time with sum32).
func (r reference) gemv(t tensor, x []float32, acc []float64) {
	a := r.w.of(t)
	m := t.rows
	if r.sum32 {
		parallel(m, m*t.cols, func(lo, hi int) {
			tot, part := make([]float32, hi-lo), make([]float32, hi-lo)
			for j0 := 0; j0 < t.cols; j0 += sumBlock {
				clear(part)
				for j := j0; j < min(j0+sumBlock, t.cols); j++ {
					xj := x[j]
					for i, v := range a[j*m+lo : j*m+hi] {
						part[i] += v * xj
					}
				}
				for i, p := range part {
					tot[i] += p
				}
			}
			for i, v := range tot {
				acc[lo+i] = float64(v)
			}
		})
		return
	}
	parallel(m, m*t.cols, func(lo, hi int) {
		out := acc[lo:hi]
		clear(out)
		for j, xj := range x[:t.cols] {
			if xj == 0 {
				continue
			}
			col := a[j*m+lo : j*m+hi]
			for i, v := range col {
				out[i] += float64(v) * float64(xj)
			}
		}
	})
}

// sumBlock is the products sum32 adds before adding them to the total.
const sumBlock = 32

// dot32 is a·b in float32, sumBlock products at a time.
func dot32(a, b []float32) float32 {
	var tot float32
	for j0 := 0; j0 < len(a); j0 += sumBlock {
		var part float32
		for j := j0; j < min(j0+sumBlock, len(a)); j++ {
			part += a[j] * b[j]
		}
		tot += part
	}
	return tot
}

// parallel runs fn over [0, n) in parts, one a core, when work (its
// multiply-adds) is worth the goroutines.
func parallel(n, work int, fn func(lo, hi int)) {
	parts := min(runtime.GOMAXPROCS(0), n/64)
	if work < 1<<18 || parts < 2 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(p*n/parts, (p+1)*n/parts)
		}()
	}
	wg.Wait()
}
