package conformance

import (
	"math"
	"testing"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/require"
)

// testGemmIEEE: a GEMM adds every product, zeros included, so that NaN and
// Inf propagate as IEEE arithmetic has them (NaN·0 and Inf·0 are NaN), as
// measured on an H100 with cuBLAS 13.1 in FP32; and with beta 0 it does not
// read C, which need not hold a number then, as cuBLAS documents.
func (s *suite) testGemmIEEE(t *testing.T, h *cublas.Handle, st cudart.Streams, stream cudart.Stream) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, typ := range []cublas.DataType{cublas.Float32, cublas.Float16, cublas.BFloat16} {
		for _, c := range []struct {
			name  string
			a, b  [2]float32 // op(A) 1×2, op(B) 2×1
			c     float32
			beta  float32
			isNaN bool
			want  float64
		}{
			{"NaNTimesZero", [2]float32{nan, 1}, [2]float32{0, 1}, 0, 0, true, 0},
			{"InfTimesZero", [2]float32{inf, 1}, [2]float32{0, 1}, 0, 0, true, 0},
			{"ZeroTimesNaNLater", [2]float32{1, nan}, [2]float32{0, 1}, 0, 0, true, 0},
			{"InfPlusOne", [2]float32{inf, 1}, [2]float32{1, 1}, 0, 0, false, math.Inf(1)},
			{"NaNInCWithBeta", [2]float32{1, 1}, [2]float32{1, 1}, nan, 1, true, 0},
			{"NaNInCBetaZero", [2]float32{1, 1}, [2]float32{1, 1}, nan, 0, false, 2},
		} {
			t.Run(typ.String()+"/"+c.name, func(t *testing.T) {
				a := &operand{t: typ, bytes: make([]byte, 2*typ.Size())}
				b := &operand{t: typ, bytes: make([]byte, 2*typ.Size())}
				out := &operand{t: typ, bytes: make([]byte, typ.Size())}
				for i := range 2 {
					a.put(i, c.a[i])
					b.put(i, c.b[i])
				}
				out.put(0, c.c)
				pc := s.upload(t, out.bytes)
				g := cublas.Gemm{M: 1, N: 1, K: 2, Alpha: 1, Beta: c.beta,
					A: cublas.Matrix{Ptr: s.upload(t, a.bytes), Type: typ, LD: 1},
					B: cublas.Matrix{Ptr: s.upload(t, b.bytes), Type: typ, LD: 2},
					C: cublas.Matrix{Ptr: pc, Type: typ, LD: 1}}
				require.NoError(t, h.Gemm(g), "Gemm(%v)", g)
				require.NoError(t, st.StreamSynchronize(s.dev, stream), "cudaStreamSynchronize")
				got := out.get(s.read(t, pc, uint64(typ.Size())), 0)
				if c.isNaN {
					require.True(t, math.IsNaN(got), "C = %g, want NaN", got)
				} else {
					require.Equal(t, c.want, got)
				}
			})
		}
	}
}
