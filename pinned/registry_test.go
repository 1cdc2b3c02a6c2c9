package pinned

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/devreset"
)

// model is the simplest registry: which byte of a buffer belongs to which
// registration, by its start.
type model struct {
	owner  []int // start+1 of the registration holding each byte; 0 when none
	starts map[int]int
}

func newModel(n int) *model { return &model{owner: make([]int, n), starts: map[int]int{}} }

func (m *model) overlaps(lo, hi int) bool {
	for _, o := range m.owner[lo:hi] {
		if o != 0 {
			return true
		}
	}
	return false
}

func (m *model) add(lo, hi int) {
	for i := lo; i < hi; i++ {
		m.owner[i] = lo + 1
	}
	m.starts[lo] = hi
}

func (m *model) remove(lo int) {
	for i := lo; i < m.starts[lo]; i++ {
		m.owner[i] = 0
	}
	delete(m.starts, lo)
}

// randomRange is a non-empty range of buf, often short, often touching
// another's edges.
func randomRange(r *rand.Rand, n int) (lo, hi int) {
	lo = r.IntN(n)
	hi = lo + 1 + r.IntN(min(n-lo, 1+r.IntN(64)))
	return lo, hi
}

func TestRegistryAgreesWithModel(t *testing.T) {
	const size = 512
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 1))
		var reg registry
		buf := make([]byte, size)
		m := newModel(size)
		for step := range 300 {
			lo, hi := randomRange(r, size)
			if r.IntN(3) == 0 {
				_, wantOK := m.starts[lo]
				require.Equal(t, wantOK, reg.release(buf[lo:hi]), "seed %d step %d: release at %d", seed, step, lo)
				if wantOK {
					m.remove(lo)
				}
				continue
			}
			err := reg.claim(buf[lo:hi], "test", devreset.Watch{})
			if m.overlaps(lo, hi) {
				require.ErrorIs(t, err, ErrAlreadyRegistered, "seed %d step %d: [%d, %d)", seed, step, lo, hi)
				continue
			}
			require.NoError(t, err, "seed %d step %d: [%d, %d)", seed, step, lo, hi)
			m.add(lo, hi)
		}
		require.Equal(t, len(m.starts), reg.len())
	}
}

// TestRegisterAgreesWithModel runs random Register and Unregister sequences
// on the fake, which checks overlaps on its own: both must agree with the
// model at every step.
func TestRegisterAgreesWithModel(t *testing.T) {
	const size = 8192
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 2))
		f := cudarttest.NewFakeT(t)
		buf := make([]byte, size)
		m := newModel(size)
		live := map[int]*Registration{}
		for step := range 200 {
			if len(live) > 0 && r.IntN(3) == 0 {
				for lo, g := range live { // map order: a random one
					require.NoError(t, g.Unregister(), "seed %d step %d", seed, step)
					delete(live, lo)
					m.remove(lo)
					break
				}
			} else {
				lo, hi := randomRange(r, size)
				g, err := Register(f, 0, buf[lo:hi], Flags(r.IntN(4)))
				if m.overlaps(lo, hi) {
					require.ErrorIs(t, err, ErrAlreadyRegistered, "seed %d step %d: [%d, %d)", seed, step, lo, hi)
				} else {
					require.NoError(t, err, "seed %d step %d: [%d, %d)", seed, step, lo, hi)
					live[lo] = g
					m.add(lo, hi)
				}
			}
			require.Equal(t, len(live), f.Live().RegisteredAllocs, "seed %d step %d", seed, step)
		}
		for _, g := range live {
			require.NoError(t, g.Unregister())
		}
		requireNothingPinned(t, f, nil)
	}
}
