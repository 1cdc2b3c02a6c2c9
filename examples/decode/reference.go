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
// sums differ within cuBLAS's documented bound), and the FP16 roundings at
// the points where the device rounds: the normalised activations (the
// GEMMs' inputs), the keys and values as stored, the attention's output
// and the ReLU's; the residual, the GEMMs' outputs and the logits stay
// float32.
//
// With sum32 each GEMM (the logits' too) is summed in float32 instead, 32
// products at a time and those blocks in order, as a GPU's GEMM may: a
// second recomputation, as exact as the first within FP32, whose distance
// from it is the spread any two FP32 implementations of this FP16 model
// show. It is not small: a last-bit difference before an FP16 rounding
// flips it now and then, a flipped input moves every output of the next
// GEMM, and after a few roundings most FP16 values differ by an ulp.
type reference struct {
	w     *weights
	sum32 bool
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
	h := make([]float32, s.width)
	qkv := make([]float32, s.qkvRows())
	att := make([]float32, s.qDim())
	f := make([]float32, s.ffn)
	acc := make([]float64, max(s.qkvRows(), s.ffn, s.width))
	scores := make([]float64, pos+1)
	qd, kvd := s.qDim(), s.kvDim()
	for l, lt := range w.layers {
		rmsNorm(h, x, w.of(lt.attnNorm))
		r.gemv(lt.qkv, h, acc)
		for i := range qkv {
			qkv[i] = float32(acc[i])
		}
		for i := range kvd {
			seq.k[l] = append(seq.k[l], f16(qkv[qd+i]))
			seq.v[l] = append(seq.v[l], f16(qkv[qd+kvd+i]))
		}
		for hd := range s.heads {
			g := hd / (s.heads / s.kvHeads)
			attend(att[hd*headDim:(hd+1)*headDim], qkv[hd*headDim:(hd+1)*headDim],
				headOf(seq.k[l], pos+1, kvd, g), headOf(seq.v[l], pos+1, kvd, g), pos+1, attnScale, scores)
		}
		r.gemv(lt.wo, att, acc)
		for i := range x {
			x[i] = float32(acc[i] + float64(x[i]))
		}
		rmsNorm(h, x, w.of(lt.ffnNorm))
		r.gemv(lt.w1, h, acc)
		for i := range f {
			f[i] = reluF16(float32(acc[i]))
		}
		r.gemv(lt.w2, f, acc)
		for i := range x {
			x[i] = float32(acc[i] + float64(x[i]))
		}
	}
	seq.n++
	if logits == nil {
		return
	}
	rmsNorm(h, x, w.of(w.finalNorm))
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
