package plan

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFreeSpaceBestFit takes and releases random ranges and checks each best
// fit against a scan of a byte map of the same arena.
func TestFreeSpaceBestFit(t *testing.T) {
	const unit, units = 256, 64
	r := rand.New(rand.NewPCG(8, 9))
	f := newFreeSpace([]interval{{2 * unit, 4 * unit}})
	taken := make([]bool, units)
	taken[2], taken[3] = true, true
	var live []interval
	for step := range 5000 {
		if len(live) > 0 && r.IntN(3) == 0 {
			k := r.IntN(len(live))
			iv := live[k]
			f.release(iv.lo, iv.hi)
			for u := iv.lo / unit; u < iv.hi/unit; u++ {
				taken[u] = false
			}
			live = append(live[:k], live[k+1:]...)
			continue
		}
		size := uint64(1+r.IntN(6)) * unit
		al := uint64(unit) << r.IntN(3)
		off, glo, ghi, ok := f.bestFit(size, al, nil)
		require.True(t, ok)
		want := scanBestFit(taken, size/unit, al/unit)
		require.Equal(t, want*unit, off, "step %d: size %d align %d", step, size, al)
		if off+size > units*unit {
			// Above the modelled arena: only the top gap holds it.
			require.Equal(t, uint64(math.MaxUint64), ghi)
			continue
		}
		f.take(glo, ghi, off, off+size)
		for u := off / unit; u < (off+size)/unit; u++ {
			require.False(t, taken[u])
			taken[u] = true
		}
		live = append(live, interval{off, off + size})
	}
	assert.NotEmpty(t, live)
}

// scanBestFit finds, in units, the lowest aligned offset in the smallest
// free run that holds size at the alignment, or the first aligned unit past
// the last taken one.
func scanBestFit(taken []bool, size, al uint64) uint64 {
	best, bestLen := uint64(math.MaxUint64), uint64(math.MaxUint64)
	top := uint64(0)
	for u := range taken {
		if taken[u] {
			top = uint64(u) + 1
		}
	}
	for lo := uint64(0); lo < top; {
		if taken[lo] {
			lo++
			continue
		}
		hi := lo
		for hi < top && !taken[hi] {
			hi++
		}
		off := (lo + al - 1) / al * al
		if off+size <= hi && hi-lo < bestLen {
			best, bestLen = off, hi-lo
		}
		lo = hi
	}
	if best != math.MaxUint64 {
		return best
	}
	return (top + al - 1) / al * al
}

func TestFitInSkipsBusy(t *testing.T) {
	busy := []interval{{256, 512}, {1024, 2048}}
	tests := []struct {
		name      string
		lo, hi    uint64
		size, al  uint64
		want      uint64
		wantFound bool
	}{
		{"before busy", 0, 4096, 256, 256, 0, true},
		{"skips first busy", 0, 4096, 512, 256, 512, true},
		{"skips both", 0, 4096, 1024, 256, 2048, true},
		{"aligned past busy", 0, 8192, 256, 4096, 0, true},
		{"no room", 0, 2048, 1024, 256, 0, false},
		{"alignment overflows", math.MaxUint64 - 300, math.MaxUint64, 256, 512, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := fitIn(tt.lo, tt.hi, tt.size, tt.al, busy)
			require.Equal(t, tt.wantFound, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}
