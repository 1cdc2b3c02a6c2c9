// Package checked holds arithmetic on byte counts that reports overflow
// instead of wrapping: sums and products that must fit in 64 bits, and
// exact totals past 2^64 for figures that are only printed.
//
// align rounds offsets up; this package adds and multiplies them. A wrapped
// sum turns into a small number, which as an offset overlaps another
// buffer and as a statistic is a lie, so every caller either refuses what
// does not fit or prints it exactly.
package checked

import (
	"math/big"
	"math/bits"
)

// Add returns a+b and whether it fits in 64 bits.
func Add(a, b uint64) (uint64, bool) {
	s, carry := bits.Add64(a, b, 0)
	return s, carry == 0
}

// Mul returns a*b and whether it fits in 64 bits.
func Mul(a, b uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	return lo, hi == 0
}

// SaturatingMul returns a*b, or 2^64-1 when that does not fit: for keys
// that only order things, where the largest value is the right place for
// anything larger.
func SaturatingMul(a, b uint64) uint64 {
	if p, ok := Mul(a, b); ok {
		return p
	}
	return 1<<64 - 1
}

// Total is an exact sum of up to 2^64 byte counts, each below 2^64: 128
// bits, which no such sum can pass. The zero value is 0.
type Total struct{ hi, lo uint64 }

// Add adds n to t.
func (t *Total) Add(n uint64) {
	var carry uint64
	t.lo, carry = bits.Add64(t.lo, n, 0)
	t.hi += carry
}

// Uint64 returns t and whether it fits in 64 bits.
func (t Total) Uint64() (uint64, bool) { return t.lo, t.hi == 0 }

// Big returns t as a big.Int.
func (t Total) Big() *big.Int {
	b := new(big.Int).SetUint64(t.hi)
	return b.Lsh(b, 64).Or(b, new(big.Int).SetUint64(t.lo))
}

// Float64 is t, rounded to the nearest float64: for ratios.
func (t Total) Float64() float64 { return float64(t.hi)*(1<<64) + float64(t.lo) }

// String is t in decimal, in full: "18446744073709551616" for 2^64.
func (t Total) String() string { return t.Big().String() }
