package align

import "errors"

// CUDA is the alignment the pool gives every buffer: cudaMalloc returns
// 256-byte-aligned memory, and offsets that are multiples of 256 keep every
// sub-buffer as aligned as a buffer of its own would be.
const CUDA = 256

// ErrOverflow is returned when rounding up would not fit in the type.
var ErrOverflow = errors.New("align: result overflows")

// ErrNotPowerOfTwo is returned when an alignment is zero or not a power of two.
var ErrNotPowerOfTwo = errors.New("align: alignment is not a power of two")

// Unsigned is the set of integer types the helpers accept.
type Unsigned interface {
	~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

// IsPowerOfTwo reports whether n is a power of two. Zero is not.
func IsPowerOfTwo[T Unsigned](n T) bool {
	return n != 0 && n&(n-1) == 0
}

// Up rounds n up to the next multiple of a. It fails with ErrNotPowerOfTwo
// when a is not a power of two and with ErrOverflow when the result does not
// fit in T.
func Up[T Unsigned](n, a T) (T, error) {
	if !IsPowerOfTwo(a) {
		return 0, ErrNotPowerOfTwo
	}
	r := (n + a - 1) &^ (a - 1)
	if r < n {
		return 0, ErrOverflow
	}
	return r, nil
}

// Down rounds n down to a multiple of a. It fails with ErrNotPowerOfTwo when a
// is not a power of two.
func Down[T Unsigned](n, a T) (T, error) {
	if !IsPowerOfTwo(a) {
		return 0, ErrNotPowerOfTwo
	}
	return n &^ (a - 1), nil
}

// Is reports whether n is a multiple of a. An alignment that is not a power of
// two makes every n unaligned.
func Is[T Unsigned](n, a T) bool {
	return IsPowerOfTwo(a) && n&(a-1) == 0
}
