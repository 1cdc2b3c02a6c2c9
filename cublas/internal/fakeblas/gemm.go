package fakeblas

import (
	"encoding/binary"
	"math"

	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/blas"
)

// gemmTypes are the type pairs cublasGemmEx takes with CUBLAS_COMPUTE_32F:
// A and B alike, C alike or FP32.
func gemmTypes(g blas.Gemm) bool {
	if g.AType != g.BType || g.Compute != blas.Compute32F {
		return false
	}
	switch g.AType {
	case blas.R32F:
		return g.CType == blas.R32F
	case blas.R16F, blas.R16BF:
		return g.CType == g.AType || g.CType == blas.R32F
	}
	return false
}

// gemm checks g as cublasGemmEx does, then queues it on h's stream: call c
// of handle raw.
func (b *Backend) gemm(c blas.Call, raw uintptr, h *handle, g blas.Gemm) blas.Status {
	rowsA, rowsB := g.M, g.K
	if g.TransA != blas.OpN {
		rowsA = g.K
	}
	if g.TransB != blas.OpN {
		rowsB = g.N
	}
	switch {
	case g.TransA < 0 || g.TransA > 2 || g.TransB < 0 || g.TransB > 2:
		return blas.StatusInvalidValue
	case g.M < 0 || g.N < 0 || g.K < 0:
		return blas.StatusInvalidValue
	case g.LDA < max(1, rowsA) || g.LDB < max(1, rowsB) || g.LDC < max(1, g.M):
		return blas.StatusInvalidValue
	case !gemmTypes(g):
		return blas.StatusNotSupported
	case g.Batch < 0:
		// cuBLAS 13.1 checks the batch count only when it launches.
		return blas.StatusExecutionFailed
	}
	if g.M == 0 || g.N == 0 || g.Batch == 0 {
		return blas.StatusSuccess
	}
	s, tf32 := h.stream, h.mode&^16 == 3
	run := func(a *cudarttest.Access) error {
		// Every operand is checked before anything is allocated or
		// computed: a shape that fits cuBLAS's int may not fit memory.
		for _, o := range gemmOperands(g) {
			if why := checkOperand(a, o, int64(g.Batch)); why != "" {
				return fmt.Errorf("%s on handle 0x%x, stream 0x%x: %s", c, raw, uintptr(s), why)
			}
		}
		for i := range int64(g.Batch) {
			if err := gemmOne(a, g, i, tf32); err != nil {
				return err
			}
		}
		return nil
	}
	// Captured with no workspace, cuBLAS takes one from the stream's
	// memory pool around its kernel: the graph gets an allocation and a
	// free node.
	w := cudarttest.Work{Device: h.device, Stream: s, Call: c.String(), Scratch: h.ws == 0, Run: run}
	if err := b.lib.Enqueue(w); err != nil {
		return blas.StatusExecutionFailed
	}
	return blas.StatusSuccess
}

// gemmOne computes the GEMM of batch i through k: C = alpha op(A) op(B) +
// beta C, in float64, rounded once to C's type. Every product is added,
// zeros included, so that NaN and Inf propagate as IEEE arithmetic has them
// (NaN·0 and Inf·0 are NaN), as cuBLAS's kernels do; C is not read when beta
// is 0, as cuBLAS documents, so that NaN in C does not reach the result
// then. Its error is an access that faulted, which checkOperand has ruled
// out.
func gemmOne(a *cudarttest.Access, g blas.Gemm, i int64, tf32 bool) error {
	m, n, kk := int(g.M), int(g.N), int(g.K)
	opA, err := readOp(a, g.A+uintptr(i*g.StrideA*elemSize(g.AType)), g.AType, int(g.LDA), g.TransA != blas.OpN, m, kk, tf32)
	if err != nil {
		return err
	}
	opB, err := readOp(a, g.B+uintptr(i*g.StrideB*elemSize(g.BType)), g.BType, int(g.LDB), g.TransB != blas.OpN, kk, n, tf32)
	if err != nil {
		return err
	}
	cp := g.C + uintptr(i*g.StrideC*elemSize(g.CType))
	es := int(elemSize(g.CType))
	col := make([]byte, m*es)
	acc := make([]float64, m)
	for j := range n {
		clear(acc)
		for l := range kk {
			bl := float64(opB[l+j*kk])
			ac := opA[l*m : (l+1)*m]
			for r, av := range ac {
				acc[r] += float64(av) * bl
			}
		}
		p := cudart.DevicePtr(cp + uintptr(j*int(g.LDC)*es))
		if g.Beta != 0 {
			if err := a.Read(p, col); err != nil {
				return err
			}
		}
		for r := range m {
			v := float64(g.Alpha) * acc[r]
			if g.Beta != 0 {
				v += float64(g.Beta) * float64(decode(col[r*es:], g.CType))
			}
			encode(col[r*es:], g.CType, float32(v))
		}
		if err := a.Write(p, col); err != nil {
			return err
		}
	}
	return nil
}

// readOp reads op(X), rows×cols, column-major and dense, from the matrix at
// p with leading dimension ld, transposed when trans. Its error is a read
// that faulted.
func readOp(a *cudarttest.Access, p uintptr, t int32, ld int, trans bool, rows, cols int, tf32 bool) ([]float32, error) {
	out := make([]float32, rows*cols)
	es := int(elemSize(t))
	// X is stored rows×cols, or cols×rows when transposed: read its columns.
	sr, sc := rows, cols
	if trans {
		sr, sc = cols, rows
	}
	buf := make([]byte, sr*es)
	for c := range sc {
		if err := a.Read(cudart.DevicePtr(p+uintptr(c*ld*es)), buf); err != nil {
			return nil, err
		}
		for r := range sr {
			v := decode(buf[r*es:], t)
			if tf32 && t == blas.R32F {
				v = blas.TF32(v)
			}
			if trans {
				out[c+r*rows] = v
			} else {
				out[r+c*rows] = v
			}
		}
	}
	return out, nil
}

func elemSize(t int32) int64 {
	if t == blas.R32F {
		return 4
	}
	return 2
}

func decode(b []byte, t int32) float32 {
	switch t {
	case blas.R16F:
		return blas.F16To32(binary.LittleEndian.Uint16(b))
	case blas.R16BF:
		return blas.BF16To32(binary.LittleEndian.Uint16(b))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b))
}

func encode(b []byte, t int32, v float32) {
	switch t {
	case blas.R16F:
		binary.LittleEndian.PutUint16(b, blas.F16(v))
	case blas.R16BF:
		binary.LittleEndian.PutUint16(b, blas.BF16(v))
	default:
		binary.LittleEndian.PutUint32(b, math.Float32bits(v))
	}
}
