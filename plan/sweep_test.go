package plan

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSweepValid plans random inputs, some around placed buffers alive
// throughout and some around placed buffers alive in part, by the sweep
// that large inputs get, and checks every plan with Validate.
func TestSweepValid(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for trial := range 200 {
		n := 1 + r.IntN(300)
		reqs := make([]Request, n)
		for i := range reqs {
			first := r.IntN(100)
			reqs[i] = Request{Size: 1 + r.Uint64N(1<<16), Align: 1 << r.IntN(13), First: first, Last: first + r.IntN(30)}
		}
		var placed []Placed
		if trial%2 == 1 {
			placed = placedAround(r, 1+r.IntN(40))
		}
		p, err := newProblem(reqs, placed)
		require.NoError(t, err)
		busy, global := fixedBusy(p.items, p.fixed, p.fixedOff)
		off, top, ok := sweep(p.items, busy, global)
		require.True(t, ok)
		all, offs := withPlaced(reqs, off, placed)
		require.NoError(t, Validate(all, offs), "trial %d", trial)
		lb, err := LowerBound(all)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, max(top, p.fixedTop), lb)
	}
}

// placedAround returns a valid plan of n buffers, half of them alive for
// the whole plan.
func placedAround(r *rand.Rand, n int) []Placed {
	reqs := make([]Request, n)
	for i := range reqs {
		first := r.IntN(120)
		reqs[i] = Request{Size: 1 + r.Uint64N(1<<16), First: first, Last: first + r.IntN(40)}
		if i%2 == 0 {
			reqs[i].First, reqs[i].Last = 0, 1<<31-1
		}
	}
	res, err := Plan(reqs, WithTries(0))
	if err != nil {
		panic(err)
	}
	placed := make([]Placed, n)
	for i := range placed {
		placed[i] = Placed{Request: reqs[i], Offset: res.Offsets[i]}
	}
	return placed
}

// withPlaced returns new and placed requests and their offsets together.
func withPlaced(reqs []Request, offs []uint64, placed []Placed) ([]Request, []uint64) {
	all := append([]Request(nil), reqs...)
	allOffs := append([]uint64(nil), offs...)
	for _, p := range placed {
		all = append(all, p.Request)
		allOffs = append(allOffs, p.Offset)
	}
	return all, allOffs
}
