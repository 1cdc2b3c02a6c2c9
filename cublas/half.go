package cublas

import "github.com/cudapool/cudapool/internal/blas"

// Float16Bits is f rounded to IEEE half precision (to nearest even, as
// CUDA's __float2half_rn), as the bits a Float16 matrix holds.
func Float16Bits(f float32) uint16 { return blas.F16(f) }

// Float16FromBits is the half-precision value of bits, exactly.
func Float16FromBits(bits uint16) float32 { return blas.F16To32(bits) }

// BFloat16Bits is f rounded to bfloat16 (to nearest even, as CUDA's
// __float2bfloat16_rn), as the bits a BFloat16 matrix holds.
func BFloat16Bits(f float32) uint16 { return blas.BF16(f) }

// BFloat16FromBits is the bfloat16 value of bits, exactly.
func BFloat16FromBits(bits uint16) float32 { return blas.BF16To32(bits) }
