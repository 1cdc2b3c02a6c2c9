package checked_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/internal/checked"
)

func TestAddAndMul(t *testing.T) {
	tests := []struct {
		name       string
		a, b       uint64
		sum        uint64
		sumOK      bool
		product    uint64
		productOK  bool
		saturating uint64
	}{
		{"zeros", 0, 0, 0, true, 0, true, 0},
		{"small", 3, 4, 7, true, 12, true, 12},
		{"sum at the top", math.MaxUint64 - 1, 1, math.MaxUint64, true, math.MaxUint64 - 1, true, math.MaxUint64 - 1},
		{"sum past the top", math.MaxUint64, 1, 0, false, math.MaxUint64, true, math.MaxUint64},
		{"two halves", 1 << 63, 1 << 63, 0, false, 0, false, math.MaxUint64},
		{"product at the top", math.MaxUint32 + 2, math.MaxUint32, math.MaxUint32*2 + 2, true, math.MaxUint64, true, math.MaxUint64},
		{"product past the top", 1 << 32, 1 << 32, 1 << 33, true, 0, false, math.MaxUint64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := checked.Add(tt.a, tt.b)
			assert.Equal(t, tt.sumOK, ok, "sum fits")
			if ok {
				assert.Equal(t, tt.sum, s)
			}
			p, ok := checked.Mul(tt.a, tt.b)
			assert.Equal(t, tt.productOK, ok, "product fits")
			if ok {
				assert.Equal(t, tt.product, p)
			}
			assert.Equal(t, tt.saturating, checked.SaturatingMul(tt.a, tt.b))
		})
	}
}

// TestAgainstBig checks Add, Mul and Total against math/big on random
// values, many near the top of the range.
func TestAgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	top := new(big.Int).SetUint64(math.MaxUint64)
	draw := func() uint64 {
		switch r.IntN(3) {
		case 0:
			return math.MaxUint64 - r.Uint64N(1<<20)
		case 1:
			return r.Uint64() >> r.IntN(64)
		}
		return r.Uint64()
	}
	for range 10000 {
		a, b := draw(), draw()
		ba, bb := new(big.Int).SetUint64(a), new(big.Int).SetUint64(b)
		want := new(big.Int).Add(ba, bb)
		s, ok := checked.Add(a, b)
		require.Equal(t, want.Cmp(top) <= 0, ok, "%d + %d", a, b)
		if ok {
			require.Equal(t, want.Uint64(), s)
		}
		want.Mul(ba, bb)
		p, ok := checked.Mul(a, b)
		require.Equal(t, want.Cmp(top) <= 0, ok, "%d * %d", a, b)
		if ok {
			require.Equal(t, want.Uint64(), p)
		}
	}
	var total checked.Total
	want := new(big.Int)
	for range 1000 {
		n := draw()
		total.Add(n)
		want.Add(want, new(big.Int).SetUint64(n))
		require.Equal(t, want.String(), total.String())
		require.Zero(t, want.Cmp(total.Big()))
		wantFloat, _ := new(big.Float).SetInt(want).Float64()
		require.InDelta(t, wantFloat, total.Float64(), wantFloat*1e-15)
		v, ok := total.Uint64()
		require.Equal(t, want.IsUint64(), ok)
		if ok {
			require.Equal(t, want.Uint64(), v)
		}
	}
}

func TestTotal(t *testing.T) {
	var total checked.Total
	v, ok := total.Uint64()
	assert.True(t, ok)
	assert.Zero(t, v)
	assert.Equal(t, "0", total.String())

	total.Add(1 << 63)
	total.Add(1 << 63)
	_, ok = total.Uint64()
	assert.False(t, ok, "2^64 does not fit")
	assert.Equal(t, "18446744073709551616", total.String())
	assert.Equal(t, float64(1<<64), total.Float64())

	var nine checked.Total
	for range 9 {
		nine.Add(1<<61 - 1)
	}
	assert.Equal(t, "20752587082923245559", nine.String(), "9 * (2^61-1)")
}
