package cublas

import (
	"fmt"
	"math"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/blas"
	"github.com/cudapool/cudapool/internal/enum"
)

// DataType is an element type of GEMM's matrices (cudaDataType).
type DataType int32

const (
	// Float32 is IEEE single precision (CUDA_R_32F).
	Float32 DataType = 0
	// Float16 is IEEE half precision (CUDA_R_16F).
	Float16 DataType = 2
	// BFloat16 is bfloat16: float32's exponent, a 7-bit mantissa
	// (CUDA_R_16BF).
	BFloat16 DataType = 14
)

// Size is the bytes of one element: 4 or 2; 0 for a type cuBLAS does not
// take here.
func (t DataType) Size() int {
	switch t {
	case Float32:
		return 4
	case Float16, BFloat16:
		return 2
	}
	return 0
}

// String names the type as CUDA does.
func (t DataType) String() string { return blas.TypeName(int32(t)) }

// Op is what GEMM does to a matrix before multiplying (cublasOperation_t).
type Op int32

const (
	// NoTrans uses the matrix as it is (CUBLAS_OP_N).
	NoTrans Op = 0
	// Trans uses its transpose (CUBLAS_OP_T).
	Trans Op = 1
)

// String is "N" or "T", as BLAS names them.
func (o Op) String() string { return ops.Name(o) }

var ops = enum.Table[Op]{Names: []string{NoTrans: "N", Trans: "T"}, Unknown: "cublasOperation_t(%d)"}

// Matrix is a column-major matrix in device memory, as cuBLAS reads it:
// element (i, j) is at Ptr + (i + j*LD) * Type.Size(). Stride is the
// elements from one matrix of a batch to the next (GemmStridedBatched only).
type Matrix struct {
	Ptr    cudart.DevicePtr
	Type   DataType
	LD     int
	Stride int64
}

// Gemm is C = Alpha * op(A) * op(B) + Beta * C, with op(A) M×K, op(B) K×N and
// C M×N, column-major, accumulated in FP32 (CUBLAS_COMPUTE_32F). A and B
// have one type, C that type or Float32. With Beta 0, C is written without
// being read, so it need not hold numbers.
type Gemm struct {
	TransA, TransB Op
	M, N, K        int
	Alpha, Beta    float32
	A, B, C        Matrix
}

// String describes the GEMM for errors: its shape and types.
func (g Gemm) String() string {
	return fmt.Sprintf("%s%s, m %d, n %d, k %d, A %s 0x%x ld %d, B %s 0x%x ld %d, C %s 0x%x ld %d",
		g.TransA, g.TransB, g.M, g.N, g.K, g.A.Type, uintptr(g.A.Ptr), g.A.LD, g.B.Type, uintptr(g.B.Ptr), g.B.LD, g.C.Type, uintptr(g.C.Ptr), g.C.LD)
}

// Gemm queues g on the handle's stream (cublasGemmEx) and returns before it
// runs. What cuBLAS refuses the binding refuses first, naming the argument,
// as a *Error with cuBLAS's status: a negative M, N or K, an Op other than
// NoTrans or Trans, or a leading dimension below max(1, the rows of its
// matrix as stored) is ErrInvalidValue; types cuBLAS has no kernel for (A
// and B of two types; C neither theirs nor Float32) ErrNotSupported. It
// refuses too, with ErrInvalidValue, a size past cuBLAS's int and an A, B or
// C at address 0 that the GEMM would touch, which cuBLAS would take.
//
// Operands that run past their memory are not refused by the call: neither
// cuBLAS nor the binding knows how large the memory at A, B or C is. As on
// CUDA, the GEMM faults when it runs, and the next synchronisation of its
// stream or device fails with cudaErrorIllegalAddress (700), which is
// sticky: every later call on the device fails until it is reset
// (cudaDeviceReset; cudarttest's documentation shows a test that expects
// such a fault). The fake's fault names the operand and the buffer it ran
// past. A GEMM on a stream destroyed under the handle is undefined on CUDA;
// where cuBLAS reports it (the fake's CUBLAS_STATUS_EXECUTION_FAILED), the
// error also matches ErrInvalidStream and says so, when the runtime knows
// the stream is gone.
func (h *Handle) Gemm(g Gemm) error {
	return h.gemm(blas.GemmEx, g, 1)
}

// GemmStridedBatched queues batch GEMMs of the same shape on the handle's
// stream (cublasGemmStridedBatchedEx): the i-th reads A.Ptr + i*A.Stride
// elements, and likewise B and C.
func (h *Handle) GemmStridedBatched(g Gemm, batch int) error {
	return h.gemm(blas.GemmStridedBatchedEx, g, batch)
}

func (h *Handle) gemm(c blas.Call, g Gemm, batch int) error {
	f := getFrame()
	defer putFrame(f)
	if err := h.own(c.String(), f); err != nil {
		return err
	}
	defer h.mu.Unlock()
	return h.queue(f, c, g, batch)
}

// queue makes GEMM call c with the handle's current settings. The caller
// holds h.mu.
func (h *Handle) queue(f *blas.Frame, c blas.Call, g Gemm, batch int) error {
	if ws := h.cur.ws; ws != nil {
		if p, err := ws.Ptr(); err != nil || p != h.cur.wsPtr {
			return fmt.Errorf("%w: %s(%v) on device %d: the handle's workspace is no longer usable (%v); set another", ErrInvalidWorkspace, c, g, h.device, err)
		}
	}
	if why, st := fill(&f.G, g, batch); why != "" {
		e := sentinel(st)
		return newError(fmt.Sprintf("%s(%v) on device %d: refused before cuBLAS: %s", c, g, h.device, why), e.Status, e.Name, e.Message)
	}
	f.Handle = h.raw
	st, err := h.l.be.Invoke(h.device, c, f)
	if st == blas.StatusSuccess && err == nil {
		return nil
	}
	cerr := h.l.check(err, st, h.device, "%s(%v, batch %d)", c, g, batch)
	if st == blas.StatusExecutionFailed {
		// Off the path of every GEMM that succeeds: the runtime knows the
		// streams it made and destroyed, cuBLAS does not say.
		if serr := h.l.streamOn(h.device, h.cur.stream); serr != nil {
			return fmt.Errorf("cublas: %s on device %d: the handle's stream 0x%x is no live stream of the device (destroyed while the handle was bound to it?); bind a live one with SetStream: %w; cuBLAS: %w", c, h.device, uintptr(h.cur.stream), serr, cerr)
		}
	}
	return cerr
}

// fill lays g out as cuBLAS's arguments, or says why the binding refuses it
// and the status cuBLAS would return: INVALID_VALUE for a size that does
// not fit its int, an operation it does not know, a negative size or a
// leading dimension below the rows stored, in the order cuBLAS checks them;
// NOT_SUPPORTED for types it has no kernel for. An operand at address 0
// that the GEMM would touch cuBLAS takes, and the GEMM faults the device:
// INVALID_VALUE here.
func fill(d *blas.Gemm, g Gemm, batch int) (string, blas.Status) {
	for _, v := range []struct {
		name string
		n    int
	}{{"M", g.M}, {"N", g.N}, {"K", g.K}, {"lda", g.A.LD}, {"ldb", g.B.LD}, {"ldc", g.C.LD}, {"batch", batch}} {
		if v.n > math.MaxInt32 || v.n < math.MinInt32 {
			return fmt.Sprintf("%s = %d does not fit cuBLAS's int", v.name, v.n), blas.StatusInvalidValue
		}
	}
	if why := checkShape(g); why != "" {
		return why, blas.StatusInvalidValue
	}
	if why := checkTypes(g); why != "" {
		return why, blas.StatusNotSupported
	}
	if g.M > 0 && g.N > 0 && batch > 0 {
		if g.C.Ptr == 0 {
			return "C is at address 0", blas.StatusInvalidValue
		}
		if g.K > 0 {
			switch {
			case g.A.Ptr == 0 && g.B.Ptr == 0:
				return "A and B are at address 0", blas.StatusInvalidValue
			case g.A.Ptr == 0:
				return "A is at address 0", blas.StatusInvalidValue
			case g.B.Ptr == 0:
				return "B is at address 0", blas.StatusInvalidValue
			}
		}
	}
	*d = blas.Gemm{
		TransA: int32(g.TransA), TransB: int32(g.TransB),
		M: int32(g.M), N: int32(g.N), K: int32(g.K),
		Alpha: g.Alpha, Beta: g.Beta,
		A: uintptr(g.A.Ptr), B: uintptr(g.B.Ptr), C: uintptr(g.C.Ptr),
		AType: int32(g.A.Type), BType: int32(g.B.Type), CType: int32(g.C.Type),
		LDA: int32(g.A.LD), LDB: int32(g.B.LD), LDC: int32(g.C.LD),
		StrideA: g.A.Stride, StrideB: g.B.Stride, StrideC: g.C.Stride,
		Batch: int32(batch), Compute: blas.Compute32F, Algo: blas.GemmDefault,
	}
	return "", blas.StatusSuccess
}

// checkShape says which of g's operations, sizes or leading dimensions
// cuBLAS refuses, if one is: every leading dimension must be at least 1 and
// the rows of its matrix as stored (op(A) is M×K, so A stored is M×K with
// NoTrans and K×M with Trans).
func checkShape(g Gemm) string {
	for _, o := range []struct {
		name string
		op   Op
	}{{"TransA", g.TransA}, {"TransB", g.TransB}} {
		// cuBLAS takes CUBLAS_OP_C (2) too: T, for real matrices.
		if o.op < NoTrans || o.op > 2 {
			return fmt.Sprintf("%s = %v: want NoTrans or Trans", o.name, o.op)
		}
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"M", g.M}, {"N", g.N}, {"K", g.K}} {
		if v.n < 0 {
			return fmt.Sprintf("%s = %d: M, N and K must be at least 0", v.name, v.n)
		}
	}
	rowsA, whatA := g.M, "M, as TransA is N"
	if g.TransA != NoTrans {
		rowsA, whatA = g.K, "K, as TransA is T"
	}
	rowsB, whatB := g.K, "K, as TransB is N"
	if g.TransB != NoTrans {
		rowsB, whatB = g.N, "N, as TransB is T"
	}
	for _, v := range []struct {
		ld, m   string
		n, rows int
		what    string
	}{{"lda", "A", g.A.LD, rowsA, whatA}, {"ldb", "B", g.B.LD, rowsB, whatB}, {"ldc", "C", g.C.LD, g.M, "M"}} {
		if v.n < max(1, v.rows) {
			return fmt.Sprintf("%s = %d is less than max(1, %d), the rows of %s as stored (%s)", v.ld, v.n, v.rows, v.m, v.what)
		}
	}
	return ""
}

// checkTypes says why cuBLAS has no kernel for g's types, if it has none:
// A and B of one type, FP32, FP16 or BF16, and C of theirs or FP32.
func checkTypes(g Gemm) string {
	switch {
	case g.A.Type != g.B.Type:
		return fmt.Sprintf("A is %v and B %v: A and B must have one type", g.A.Type, g.B.Type)
	case g.A.Type.Size() == 0:
		return fmt.Sprintf("A and B are %v: want Float32, Float16 or BFloat16", g.A.Type)
	case g.C.Type != g.A.Type && g.C.Type != Float32:
		return fmt.Sprintf("C is %v with A and B %v: C must be of their type or Float32", g.C.Type, g.A.Type)
	}
	return ""
}
