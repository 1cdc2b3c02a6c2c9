package cublas

import (
	"fmt"
	"math"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/blas"
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
func (o Op) String() string {
	switch o {
	case NoTrans:
		return "N"
	case Trans:
		return "T"
	}
	return fmt.Sprintf("cublasOperation_t(%d)", int32(o))
}

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

// Gemm queues g on the handle's stream (cublasGemmEx). cuBLAS's refusals
// are *Error values: a leading dimension smaller than the rows it holds or a
// negative size is ErrInvalidValue, a pair of types it has no kernel for
// ErrNotSupported. The binding refuses a dimension past C's int and a
// null A, B or C that the GEMM would read or write with ErrInvalidValue
// too, before cuBLAS sees them, on CUDA and on the fake alike.
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
	if why := fill(&f.G, g, batch); why != "" {
		return newError(fmt.Sprintf("%s(%v) on device %d: %s", c, g, h.device, why), Status(blas.StatusInvalidValue), ErrInvalidValue.Name, ErrInvalidValue.Message)
	}
	f.Handle = h.raw
	st, err := h.l.be.Invoke(h.device, c, f)
	if st == blas.StatusSuccess && err == nil {
		return nil
	}
	return h.l.check(err, st, h.device, "%s(%v, batch %d)", c, g, batch)
}

// fill lays g out as cuBLAS's arguments, or says why the binding refuses it.
func fill(d *blas.Gemm, g Gemm, batch int) string {
	for _, v := range []struct {
		name string
		n    int
	}{{"m", g.M}, {"n", g.N}, {"k", g.K}, {"lda", g.A.LD}, {"ldb", g.B.LD}, {"ldc", g.C.LD}, {"batch", batch}} {
		if v.n > math.MaxInt32 || v.n < math.MinInt32 {
			return fmt.Sprintf("%s = %d does not fit cuBLAS's int", v.name, v.n)
		}
	}
	if g.M > 0 && g.N > 0 && batch > 0 {
		if g.C.Ptr == 0 {
			return "C is null"
		}
		if g.K > 0 && (g.A.Ptr == 0 || g.B.Ptr == 0) {
			return "A or B is null"
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
	return ""
}
