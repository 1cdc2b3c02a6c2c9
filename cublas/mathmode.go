package cublas

import (
	"github.com/cudapool/cudapool/internal/blas"
	"github.com/cudapool/cudapool/internal/enum"
)

// MathMode is cuBLAS's math mode (cublasMath_t): whether it may trade
// precision for speed.
type MathMode int32

const (
	// MathDefault is cuBLAS's default: FP32 GEMMs compute in FP32, with no
	// TF32 (unless the environment sets NVIDIA_TF32_OVERRIDE=1, which cuBLAS
	// honours). Handles start in it.
	MathDefault MathMode = 0
	// MathPedantic computes as the IEEE standard says, with no faster
	// approximations at all (CUBLAS_PEDANTIC_MATH).
	MathPedantic MathMode = 2
	// MathTF32 lets FP32 GEMMs use TF32 tensor cores, which round the
	// inputs to a 10-bit mantissa (CUBLAS_TF32_TENSOR_OP_MATH). The fake
	// rounds them the same way.
	MathTF32 MathMode = 3
)

// String names the mode as cuBLAS does.
func (m MathMode) String() string { return mathModes.Name(m) }

var mathModes = enum.Table[MathMode]{Prefix: "CUBLAS_", Names: []string{MathDefault: "DEFAULT_MATH", MathPedantic: "PEDANTIC_MATH", MathTF32: "TF32_TENSOR_OP_MATH"}, Unknown: "cublasMath_t(%d)"}

// SetMathMode sets the handle's math mode (cublasSetMathMode).
func (h *Handle) SetMathMode(m MathMode) error {
	return h.setHome("SetMathMode", func(f *blas.Frame) error { return h.setMathMode(f, m, false) })
}

func (h *Handle) setMathMode(f *blas.Frame, m MathMode, always bool) error {
	if m == h.cur.mode && !always {
		return nil
	}
	f.Handle, f.Int = h.raw, int32(m)
	st, err := h.l.be.Invoke(h.device, blas.SetMathMode, f)
	if err := h.l.check(err, st, h.device, "cublasSetMathMode(0x%x, %s)", h.raw, m); err != nil {
		return err
	}
	h.cur.mode = m
	return nil
}

// MathMode is the handle's math mode.
func (h *Handle) MathMode() (MathMode, error) {
	return held(h, h.own("MathMode", nil), func() MathMode { return h.home.mode })
}
