package vmem_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/vmem"
)

// pg is the granularity of the property tests: the smallest the fake
// allows, so that checking every byte written after every step stays fast.
const pg = 4 << 10

// granules holds what the test wrote, granule by granule, at offsets from
// the start of an Arena or a Vector.
type granules map[uint64][]byte

// write puts random bytes in granule i and remembers them.
func (w granules) write(t *testing.T, f *cudarttest.Fake, r *rand.ChaCha8, s *subject, i uint64) {
	b := make([]byte, pg)
	_, _ = r.Read(b)
	put(t, f, 0, s.shape().ptr.Add(i*pg), b, pg)
	w[i] = b
}

// check reads back every granule remembered.
func (w granules) check(t *testing.T, f *cudarttest.Fake, s *subject, step int) {
	t.Helper()
	for i, b := range w {
		require.Equal(t, b, get(t, f, 0, s.shape().ptr.Add(i*pg), pg, pg), "granule %d after step %d", i, step)
	}
}

// roundUpTo is n rounded up to a multiple of m.
func roundUpTo(n, m uint64) uint64 { return (n + m - 1) / m * m }

// seeded is a fixed ChaCha8 seed made from n.
func seeded(n uint64) (seed [32]byte) {
	seed[0] = byte(n)
	return seed
}

// lastStart is where the last growth of the model starts.
func lastStart(ends []uint64) uint64 {
	if len(ends) < 2 {
		return 0
	}
	return ends[len(ends)-2]
}

// TestArenaRandomEnsureAndTrim runs random Ensure, Trim and writes against a
// model: the arena's growths are the boundaries Ensure made (its request
// rounded up to the chunk, clamped to the reservation), Trim drops the
// growths that start at or past its argument, and every granule written and
// not trimmed since reads back as written.
func TestArenaRandomEnsureAndTrim(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		const max = 40*pg + 123
		chunk := uint64(pg) * seed
		src := rand.NewChaCha8(seeded(seed))
		r := rand.New(src)
		f := newFake(t, cudarttest.WithGranularity(pg))
		a, err := vmem.NewArena(f, 0, max, vmem.WithChunk(chunk))
		require.NoError(t, err)
		s := &subject{shape: func() shape { return shape{ptr: a.Base()} }}
		var ends []uint64 // the model: where each growth ends
		mapped := func() uint64 {
			if len(ends) == 0 {
				return 0
			}
			return ends[len(ends)-1]
		}
		written := granules{}
		for step := range 200 {
			switch op := r.IntN(10); {
			case op < 5:
				n := r.Uint64N(max + pg)
				err := a.Ensure(n)
				if n > max {
					require.ErrorIs(t, err, vmem.ErrExhausted)
					break
				}
				require.NoError(t, err)
				if n > mapped() {
					ends = append(ends, min(roundUpTo(n, chunk), roundUpTo(max, pg)))
				}
			case op < 7:
				n := r.Uint64N(max)
				require.NoError(t, a.Trim(n))
				for len(ends) > 0 && lastStart(ends) >= n {
					ends = ends[:len(ends)-1]
				}
				for i := range written {
					if (i+1)*pg > mapped() {
						delete(written, i)
					}
				}
			default:
				if m := mapped(); m > 0 {
					written.write(t, f, src, s, r.Uint64N(m/pg))
				}
			}
			require.Equal(t, mapped(), a.Mapped(), "seed %d step %d", seed, step)
			require.Equal(t, mapped(), f.Live().PhysBytes, "seed %d step %d: the device holds what is mapped", seed, step)
			written.check(t, f, s, step)
		}
		require.NoError(t, a.Close())
	}
}

// TestVectorRandomGrowth runs random Grow, Reserve, writes and blockers of
// the address space after the vector: Size is always the largest Grow
// rounded up to the chunk, Reserved at least that, and every byte written
// reads back wherever the vector has moved.
func TestVectorRandomGrowth(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		src := rand.NewChaCha8(seeded(seed + 100))
		r := rand.New(src)
		f := newFake(t, cudarttest.WithGranularity(pg))
		chunk := uint64(pg) * (1 + seed%3)
		v, err := vmem.NewVector(f, 0, vmem.WithChunk(chunk))
		require.NoError(t, err)
		s := &subject{shape: func() shape { return shape{ptr: v.Ptr()} }}
		var size, reserved uint64
		var unblock []func()
		blocked := map[cudart.DevicePtr]bool{}
		moves, inPlace := 0, 0
		written := granules{}
		for step := range 200 {
			before, reservedBefore := v.Ptr(), v.Reserved()
			switch op := r.IntN(10); {
			case op < 4:
				n := size + r.Uint64N(6*pg)
				require.NoError(t, v.Grow(n))
				size = max(size, roundUpTo(n, chunk))
				reserved = max(reserved, size)
			case op < 6:
				n := reserved + r.Uint64N(6*pg)
				require.NoError(t, v.Reserve(n))
				reserved = max(reserved, roundUpTo(n, pg))
			case op < 7:
				if end := v.Ptr().Add(v.Reserved()); v.Ptr() != 0 && !blocked[end] {
					blocked[end] = true
					unblock = append(unblock, block(t, f, v))
				}
			default:
				if size > 0 {
					written.write(t, f, src, s, r.Uint64N(size/pg))
				}
			}
			switch after := v.Ptr(); {
			case before != 0 && after != before:
				moves++
			case before != 0 && v.Reserved() > reservedBefore:
				inPlace++
			}
			require.Equal(t, size, v.Size(), "seed %d step %d", seed, step)
			require.Equal(t, reserved, v.Reserved(), "seed %d step %d", seed, step)
			require.Equal(t, size, f.Live().PhysBytes, "seed %d step %d", seed, step)
			written.check(t, f, s, step)
		}
		assert.Positive(t, moves, "seed %d: the blockers made the vector move", seed)
		assert.Positive(t, inPlace, "seed %d: the vector grew in place too", seed)
		require.NoError(t, v.Close())
		for _, u := range unblock {
			u()
		}
	}
}
