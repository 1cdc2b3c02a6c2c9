package conformance

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/require"
)

// gemmCase is a GEMM the suite runs and checks against float64.
type gemmCase struct {
	name           string
	ab, c          cublas.DataType
	ta, tb         cublas.Op
	m, n, k, batch int
	pad            int // extra rows in every leading dimension
	alpha, beta    float32
}

// operand is a matrix of a GEMM in host memory, as bytes of its type and as
// the values those bytes hold.
type operand struct {
	t      cublas.DataType
	rows   int
	ld     int
	cols   int
	batch  int
	values []float64
	bytes  []byte
}

func newOperand(r *rand.Rand, t cublas.DataType, rows, cols, ld, batch int, nan bool) *operand {
	o := &operand{t: t, rows: rows, cols: cols, ld: ld, batch: batch}
	n := ld * cols * batch
	o.values = make([]float64, n)
	o.bytes = make([]byte, n*t.Size())
	for i := range n {
		v := float32(r.Float64()*2 - 1)
		if nan {
			v = float32(math.NaN())
		}
		o.values[i] = o.put(i, v)
	}
	return o
}

// put stores v as element i in o's type and returns the value stored.
func (o *operand) put(i int, v float32) float64 {
	switch o.t {
	case cublas.Float16:
		h := cublas.Float16Bits(v)
		binary.LittleEndian.PutUint16(o.bytes[2*i:], h)
		return float64(cublas.Float16FromBits(h))
	case cublas.BFloat16:
		h := cublas.BFloat16Bits(v)
		binary.LittleEndian.PutUint16(o.bytes[2*i:], h)
		return float64(cublas.BFloat16FromBits(h))
	}
	binary.LittleEndian.PutUint32(o.bytes[4*i:], math.Float32bits(v))
	return float64(v)
}

func (o *operand) get(b []byte, i int) float64 {
	switch o.t {
	case cublas.Float16:
		return float64(cublas.Float16FromBits(binary.LittleEndian.Uint16(b[2*i:])))
	case cublas.BFloat16:
		return float64(cublas.BFloat16FromBits(binary.LittleEndian.Uint16(b[2*i:])))
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
}

// at is op(X)(i, j) of batch b.
func (o *operand) at(b, i, j int, trans bool) float64 {
	if trans {
		i, j = j, i
	}
	return o.values[b*o.ld*o.cols+i+j*o.ld]
}

// outputUnit is the unit roundoff of a result stored in t.
func outputUnit(t cublas.DataType) float64 {
	switch t {
	case cublas.Float16:
		return 0x1p-11
	case cublas.BFloat16:
		return 0x1p-8
	}
	return 0x1p-24
}

// gemmBound is the error allowed between a GEMM's result and the exact value
// ref: the cublas package's documented tolerance, k+2 roundings of an FP32
// accumulation over the absolute sum, and one rounding to C's type.
func gemmBound(out cublas.DataType, k int, abs, ref float64, tf32 bool) float64 {
	acc := float64(k+2) * 0x1p-23 * abs
	if tf32 {
		acc += 2 * 0x1p-11 * abs
	}
	return acc + outputUnit(out)*math.Abs(ref) + 1e-30
}

// runGemm uploads the operands of c, runs it on h, and checks C.
func (s *suite) runGemm(t *testing.T, h *cublas.Handle, st cudart.Streams, stream cudart.Stream, c gemmCase, tf32 bool) {
	r := rand.New(rand.NewPCG(uint64(c.m*7919+c.n*104729+c.k), uint64(c.ab)))
	rowsA, colsA := c.m, c.k
	if c.ta == cublas.Trans {
		rowsA, colsA = c.k, c.m
	}
	rowsB, colsB := c.k, c.n
	if c.tb == cublas.Trans {
		rowsB, colsB = c.n, c.k
	}
	a := newOperand(r, c.ab, rowsA, colsA, rowsA+c.pad, c.batch, false)
	b := newOperand(r, c.ab, rowsB, colsB, rowsB+c.pad, c.batch, false)
	cc := newOperand(r, c.c, c.m, c.n, c.m+c.pad, c.batch, c.beta == 0)
	pa, pb, pc := s.upload(t, a.bytes), s.upload(t, b.bytes), s.upload(t, cc.bytes)
	g := cublas.Gemm{
		TransA: c.ta, TransB: c.tb, M: c.m, N: c.n, K: c.k, Alpha: c.alpha, Beta: c.beta,
		A: cublas.Matrix{Ptr: pa, Type: c.ab, LD: a.ld, Stride: int64(a.ld * a.cols)},
		B: cublas.Matrix{Ptr: pb, Type: c.ab, LD: b.ld, Stride: int64(b.ld * b.cols)},
		C: cublas.Matrix{Ptr: pc, Type: c.c, LD: cc.ld, Stride: int64(cc.ld * cc.cols)},
	}
	if c.batch == 1 {
		require.NoError(t, h.Gemm(g), "Gemm(%v)", g)
	} else {
		require.NoError(t, h.GemmStridedBatched(g, c.batch), "GemmStridedBatched(%v, %d)", g, c.batch)
	}
	require.NoError(t, st.StreamSynchronize(s.dev, stream), "cudaStreamSynchronize")
	got := s.read(t, pc, uint64(len(cc.bytes)))
	worst := 0.0
	for bt := range c.batch {
		for j := range c.n {
			for i := range c.m {
				ref, abs := 0.0, 0.0
				for l := range c.k {
					p := a.at(bt, i, l, c.ta == cublas.Trans) * b.at(bt, l, j, c.tb == cublas.Trans)
					ref += p
					abs += math.Abs(p)
				}
				old := cc.values[bt*cc.ld*cc.cols+i+j*cc.ld]
				ref, abs = float64(c.alpha)*ref, math.Abs(float64(c.alpha))*abs
				if c.beta != 0 {
					ref += float64(c.beta) * old
					abs += math.Abs(float64(c.beta) * old)
				}
				idx := bt*cc.ld*cc.cols + i + j*cc.ld
				v := cc.get(got, idx)
				bound := gemmBound(c.c, c.k, abs, ref, tf32)
				if !(math.Abs(v-ref) <= bound) {
					t.Fatalf("batch %d, C(%d, %d) = %g, want %g within %g", bt, i, j, v, ref, bound)
				}
				worst = max(worst, math.Abs(v-ref)/bound)
			}
		}
		// The padding rows of C are not written.
		for j := range c.n {
			for i := c.m; i < cc.ld; i++ {
				idx := bt*cc.ld*cc.cols + i + j*cc.ld
				if v, want := cc.get(got, idx), cc.values[idx]; !(v == want || (v != v && want != want)) {
					t.Fatalf("batch %d, padding C(%d, %d) = %g, was %g: written", bt, i, j, v, want)
				}
			}
		}
	}
	t.Logf("worst error: %.3f of the bound", worst)
}

// upload copies b to new device memory, freed at cleanup.
func (s *suite) upload(t *testing.T, b []byte) cudart.DevicePtr {
	t.Helper()
	p := s.malloc(t, uint64(max(len(b), 1)))
	require.NoError(t, s.rt.Memcpy(s.dev, cudart.DeviceMem(p, uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice), "cudaMemcpy")
	return p
}
