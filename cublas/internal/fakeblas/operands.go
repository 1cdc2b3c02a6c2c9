package fakeblas

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/blas"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/checked"
)

// gemmOperand is a matrix a GEMM reads or writes, as stored: cols columns
// of rows elements, ld elements apart, and one such matrix every stride
// elements for each batch.
type gemmOperand struct {
	name       string // "A", "B" or "C"
	op         int32  // cublasOperation_t; C's is CUBLAS_OP_N
	p          uint64
	t          int32
	rows, cols uint64
	ld         uint64
	stride     int64
	write      bool // C's; A and B are read
}

// gemmOperands are the operands g touches: A and B unless K is 0, and C.
// g's shape is checked already, M and N not 0.
func gemmOperands(g blas.Gemm) []gemmOperand {
	m, n, k := uint64(g.M), uint64(g.N), uint64(g.K)
	stored := func(op int32, rows, cols uint64) (uint64, uint64) {
		if op != blas.OpN {
			return cols, rows
		}
		return rows, cols
	}
	var out []gemmOperand
	if k > 0 {
		ra, ca := stored(g.TransA, m, k)
		rb, cb := stored(g.TransB, k, n)
		out = append(out,
			gemmOperand{"A", g.TransA, uint64(g.A), g.AType, ra, ca, uint64(g.LDA), g.StrideA, false},
			gemmOperand{"B", g.TransB, uint64(g.B), g.BType, rb, cb, uint64(g.LDB), g.StrideB, false})
	}
	return append(out, gemmOperand{"C", blas.OpN, uint64(g.C), g.CType, m, n, uint64(g.LDC), g.StrideC, true})
}

// describe names o in messages, e.g. "A (T, 16×64 stored, ld 16,
// CUDA_R_32F)".
func (o gemmOperand) describe() string {
	return fmt.Sprintf("%s (%c, %d×%d stored, ld %d, %s)", o.name, "NTC"[o.op], o.rows, o.cols, o.ld, blas.TypeName(o.t))
}

// checkOperand checks every byte of o that a GEMM of batch matrices touches
// against the device's memory, as a kernel's accesses are checked, before
// anything is read: with arithmetic that cannot wrap, so that a shape
// whose bytes do not fit in memory, or in 64 bits, is a fault and not an
// allocation. It returns why the first access that faults does, or "".
func checkOperand(a *cudarttest.Access, o gemmOperand, batch int64) string {
	es := uint64(elemSize(o.t))
	colBytes := o.rows * es // below 2^33: rows fits cuBLAS's int
	step := o.ld * es
	last, ok1 := checked.Mul(o.cols-1, step)
	span, ok2 := checked.Add(last, colBytes)
	// stride is the distance between two matrices of the batch in
	// elements, its sign apart; offset is the bytes from the first to
	// matrix i, in either direction.
	stride := uint64(o.stride)
	if o.stride < 0 {
		stride = -stride
	}
	offset := func(i uint64) (uint64, bool) {
		n, ok := checked.Mul(stride, i)
		if !ok {
			return 0, false
		}
		return checked.Mul(n, es)
	}
	// The fast path: the range from the lowest matrix's first byte to the
	// highest's last is all accessible.
	if reach, ok := offset(uint64(batch - 1)); ok && ok1 && ok2 {
		lo, hi := o.p, o.p
		if o.stride < 0 {
			lo -= reach
		} else {
			hi += reach
		}
		if end, ok := checked.Add(hi, span); ok && lo <= o.p && hi >= o.p && a.Check(cudart.DevicePtr(lo), end-lo, o.write) == nil {
			return ""
		}
	}
	// Something faults: find the first matrix and column that does.
	for i := range uint64(batch) {
		what := o.describe()
		if batch > 1 {
			what += fmt.Sprintf(" of batch %d", i)
		}
		off, ok := offset(i)
		base := o.p + off
		if o.stride < 0 {
			base = o.p - off
		}
		if !ok || (o.stride < 0 && off > o.p) || (o.stride >= 0 && base < o.p) {
			return fmt.Sprintf("%s at 0x%x with a stride of %d elements starts outside the 64-bit address space", what, o.p, o.stride)
		}
		if end, ok := checked.Add(base, span); ok && ok1 && ok2 && a.Check(cudart.DevicePtr(base), end-base, o.write) == nil {
			continue
		}
		for c := range o.cols {
			off, _ := checked.Mul(c, step) // below span, or below 2^33 · 2^31
			p, ok := checked.Add(base, off)
			if !ok {
				return fmt.Sprintf("%s at %s: column %d, %s from it, starts past 2^64", what, cudart.DevicePtr(base), c, bytesize.Exact(off))
			}
			err := a.Check(cudart.DevicePtr(p), colBytes, o.write)
			if err == nil {
				continue
			}
			at := fmt.Sprintf("%s at %s: column %d, [%s, +%s)", what, cudart.DevicePtr(base), c, cudart.DevicePtr(p), bytesize.Exact(colBytes))
			if label, bufEnd, ok := a.Buffer(cudart.DevicePtr(base)); ok {
				end := uint64(bufEnd)
				if colEnd, ok := checked.Add(p, colBytes); !ok || colEnd > end {
					if !ok {
						return fmt.Sprintf("%s, runs past 2^64 and the end of %s, the buffer %s starts in", at, label, o.name)
					}
					return fmt.Sprintf("%s, ends %s past the end of %s, the buffer %s starts in", at, bytesize.Exact(colEnd-end), label, o.name)
				}
			}
			return at + ": " + err.Error()
		}
	}
	return ""
}
