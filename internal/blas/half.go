package blas

import "math"

// F16 is f rounded to IEEE half precision, to nearest even, as CUDA's
// __float2half_rn: overflow gives infinity, NaN stays NaN.
func F16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127 > 15: // overflow
		return sign | 0x7c00
	case exp-127 >= -14: // normal
		e := uint32(exp-127+15) << 10
		v := e | man>>13
		return sign | uint16(roundShift(v, man, 13))
	case exp-127 >= -25: // subnormal, or rounds up to the smallest
		m := man | 0x800000
		shift := uint32(-14-(exp-127)) + 13
		return sign | uint16(roundShift(m>>shift, m, shift))
	}
	return sign
}

// roundShift rounds v, which is m shifted right by shift bits, to nearest
// even on the bits shifted out.
func roundShift(v, m, shift uint32) uint32 {
	rem := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && v&1 == 1) {
		v++
	}
	return v
}

// F16To32 is the half-precision value h as a float32, exactly.
func F16To32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		v := float32(man) / (1 << 24)
		if sign != 0 {
			return -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// BF16 is f rounded to bfloat16, to nearest even, as CUDA's
// __float2bfloat16_rn.
func BF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN
		return uint16(b>>16) | 0x40
	}
	return uint16(roundShift(b>>16, b, 16))
}

// BF16To32 is the bfloat16 value h as a float32, exactly.
func BF16To32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// TF32 is f rounded to TF32's 10-bit mantissa, to nearest even, in a float32.
func TF32(f float32) float32 {
	b := math.Float32bits(f)
	if b&0x7f800000 == 0x7f800000 {
		return f
	}
	return math.Float32frombits(roundShift(b>>13, b, 13) << 13)
}
