package align_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/align"
)

func TestUp(t *testing.T) {
	tests := []struct {
		name    string
		n, a    uint64
		want    uint64
		wantErr error
	}{
		{"zero", 0, 256, 0, nil},
		{"one", 1, 256, 256, nil},
		{"exact", 512, 256, 512, nil},
		{"just over", 513, 256, 768, nil},
		{"alignment one", 7, 1, 7, nil},
		{"top aligned", math.MaxUint64 &^ 255, 256, math.MaxUint64 &^ 255, nil},
		{"overflow", math.MaxUint64 - 10, 256, 0, align.ErrOverflow},
		{"overflow by one", math.MaxUint64&^255 + 1, 256, 0, align.ErrOverflow},
		{"zero alignment", 5, 0, 0, align.ErrNotPowerOfTwo},
		{"odd alignment", 5, 3, 0, align.ErrNotPowerOfTwo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := align.Up(tt.n, tt.a)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestUpSmallTypes(t *testing.T) {
	got, err := align.Up[uint8](130, 64)
	require.NoError(t, err)
	assert.Equal(t, uint8(192), got)
	_, err = align.Up[uint8](193, 64)
	require.ErrorIs(t, err, align.ErrOverflow)
}

func TestDownAndIs(t *testing.T) {
	d, err := align.Down[uint64](1000, 256)
	require.NoError(t, err)
	assert.Equal(t, uint64(768), d)
	_, err = align.Down[uint64](1000, 100)
	require.ErrorIs(t, err, align.ErrNotPowerOfTwo)
	assert.True(t, align.Is[uint64](768, 256))
	assert.False(t, align.Is[uint64](769, 256))
	assert.False(t, align.Is[uint64](0, 3))
	assert.True(t, align.IsPowerOfTwo[uint32](1<<31))
	assert.False(t, align.IsPowerOfTwo[uint32](0))
	assert.False(t, align.IsPowerOfTwo[uint32](6))
}

// TestUpProperties checks, on random inputs, that Up returns the smallest
// aligned value not below n, or reports overflow exactly when none exists.
func TestUpProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		a := uint64(1) << r.IntN(64)
		n := r.Uint64()
		if i%3 == 0 {
			n = math.MaxUint64 - r.Uint64N(1<<20)
		}
		got, err := align.Up(n, a)
		fits := n <= math.MaxUint64-(a-1) || n%a == 0
		if !fits {
			require.ErrorIs(t, err, align.ErrOverflow, "n=%d a=%d", n, a)
			continue
		}
		require.NoError(t, err, "n=%d a=%d", n, a)
		require.True(t, align.Is(got, a))
		require.GreaterOrEqual(t, got, n)
		require.Less(t, got-n, a)
		down, _ := align.Down(n, a)
		require.LessOrEqual(t, down, n)
		require.True(t, align.Is(down, a))
	}
}
