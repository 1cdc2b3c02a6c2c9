package cudarttest_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

const tib = 1 << 40

// TestReserveAndFreeTheWholeSpaceAgainAndAgain: reserving and freeing 256
// TiB 65,536 times in a row, 2^64 bytes in all, reuses the freed range each
// time; each reservation ends below 2^64 and can be freed (the 65,535th was
// granted past 2^64, and could not be).
func TestReserveAndFreeTheWholeSpaceAgainAndAgain(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	const size = 256 * tib
	for i := range 1 << 16 {
		p, err := f.MemAddressReserve(size, 0, 0)
		require.NoError(t, err, "reservation %d", i)
		require.True(t, uint64(p) <= math.MaxUint64-size, "reservation %d at %s ends past 2^64", i, p)
		require.NoError(t, f.MemAddressFree(p, size), "reservation %d at %s", i, p)
	}
}

// TestAddressSpaceNeverWraps holds the fake's address space to its
// invariants over random reservations, allocations and frees, on a fake
// with 4 EiB of memory whose allocations add up to many times 2^64: every
// range granted ends below 2^64 and overlaps no live one; a refusal is
// cudaErrorMemoryAllocation; and what is freed is reused, so that once
// everything is freed the largest allocation and reservation are granted
// again.
func TestAddressSpaceNeverWraps(t *testing.T) {
	const memory = 1 << 62
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		f := cudarttest.NewFakeT(t, cudarttest.WithDeviceMemory(memory))
		type live struct {
			p       cudart.DevicePtr
			size    uint64
			reserve bool
		}
		var lives []live
		free := func(i int) {
			l := lives[i]
			if l.reserve {
				require.NoError(t, f.MemAddressFree(l.p, l.size))
			} else {
				require.NoError(t, f.Free(0, l.p))
			}
			lives = append(lives[:i], lives[i+1:]...)
		}
		sizes := []uint64{g, 3 * g, tib, 64 * tib, 100 * tib, 255 * tib, 256 * tib}
		refused, reused, last := 0, 0, uint64(0)
		for range 600 {
			if len(lives) > 0 && rng.IntN(2) == 0 {
				free(rng.IntN(len(lives)))
				continue
			}
			var l live
			var err error
			if rng.IntN(2) == 0 {
				l.size = []uint64{uint64(1 + rng.IntN(4*kib)), 1 << 60, 1<<61 + 1, memory}[rng.IntN(4)]
				l.p, err = f.Malloc(0, l.size)
			} else {
				l.size, l.reserve = sizes[rng.IntN(len(sizes))], true
				l.p, err = f.MemAddressReserve(l.size, 0, 0)
			}
			if err != nil {
				require.ErrorIs(t, err, cudart.ErrMemoryAllocation, "seed %d: %d B", seed, l.size)
				refused++
				continue
			}
			require.True(t, uint64(l.p) <= math.MaxUint64-l.size, "seed %d: %s, %d B, ends past 2^64", seed, l.p, l.size)
			for _, o := range lives {
				require.False(t, uint64(l.p) < uint64(o.p)+o.size && uint64(o.p) < uint64(l.p)+l.size,
					"seed %d: %s, %d B, overlaps %s, %d B", seed, l.p, l.size, o.p, o.size)
			}
			lives = append(lives, l)
			if uint64(l.p) < last {
				reused++
			}
			last = uint64(l.p)
		}
		require.NotZero(t, refused, "seed %d: the space or the memory ran out", seed)
		require.NotZero(t, reused, "seed %d: some range was granted below the one before it", seed)
		for len(lives) > 0 {
			free(len(lives) - 1)
		}
		p, err := f.Malloc(0, memory)
		require.NoError(t, err, "seed %d: all the memory again, all freed", seed)
		r, err := f.MemAddressReserve(256*tib, 0, 0)
		require.NoError(t, err, "seed %d: the largest reservation beside it", seed)
		assert.NoError(t, f.MemAddressFree(r, 256*tib))
		assert.NoError(t, f.Free(0, p))
	}
}
