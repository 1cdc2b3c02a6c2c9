package plan

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bruteOptimum returns the least arena over all orders of placing each item
// directly on the highest item placed before it that it meets. Every layout
// can be pushed down into one that some order builds this way, so this is
// the optimum; it costs n! and suits a handful of items.
func bruteOptimum(items []item) uint64 {
	n := len(items)
	off := make([]uint64, n)
	used := make([]bool, n)
	best := ^uint64(0)
	var rec func(k int, top uint64)
	rec = func(k int, top uint64) {
		if top >= best {
			return
		}
		if k == n {
			best = top
			return
		}
		for i := range items {
			if used[i] {
				continue
			}
			var o uint64
			for j := range items {
				if used[j] && items[j].first <= items[i].last && items[i].first <= items[j].last {
					o = max(o, off[j]+items[j].size)
				}
			}
			o = alignUpSat(o, items[i].align)
			used[i], off[i] = true, o
			rec(k+1, max(top, o+items[i].size))
			used[i] = false
		}
	}
	rec(0, 0)
	return best
}

// TestExactMatchesBruteForce checks on small random inputs that the exact
// search, given time, proves the same optimum that trying every order
// finds, and that its layouts are valid.
func TestExactMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	searched := 0
	for trial := range 400 {
		n := 2 + r.IntN(7)
		reqs := make([]Request, n)
		for i := range reqs {
			first := r.IntN(6)
			reqs[i] = Request{Size: 256 * (1 + r.Uint64N(8)), First: first, Last: first + r.IntN(4)}
			if r.IntN(5) == 0 {
				reqs[i].Align = 512 << r.IntN(2)
			}
		}
		p, err := newProblem(reqs, nil)
		require.NoError(t, err)
		want := bruteOptimum(p.items)
		sorted := byFirstStep(p.items)
		d := newDecoder(p.items, buildConflicts(p.items, sorted), make([][]interval, n))
		if _, greedy, _ := newSearcher(d, p.lb, 0).run(greedyOrders); greedy > want {
			searched++
		}
		res, err := Plan(reqs, WithTimeLimit(time.Minute))
		require.NoError(t, err)
		require.NoError(t, Validate(reqs, res.Offsets))
		require.Equal(t, want, res.ArenaBytes, "trial %d: %v", trial, reqs)
		if want > res.LowerBound {
			_, err := Plan(reqs, WithCapacity(want-256))
			var nf *NoFitError
			require.ErrorAs(t, err, &nf, "trial %d", trial)
			require.True(t, nf.Proven, "trial %d", trial)
		}
		res, err = Plan(reqs, WithCapacity(want))
		require.NoError(t, err, "trial %d", trial)
		require.NoError(t, Validate(reqs, res.Offsets))
	}
	require.Greater(t, searched, 20, "too few inputs where the greedy planners miss the optimum")
}

// TestNeverAboveGreedy checks on random inputs that what follows the greedy
// planners (their search, then the exact search) only ever lowers the arena
// of their best layout, whatever the options.
func TestNeverAboveGreedy(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for trial := range 150 {
		reqs := make([]Request, 20+r.IntN(100))
		for i := range reqs {
			first := r.IntN(40)
			reqs[i] = Request{Size: 1 + r.Uint64N(1<<(8+r.IntN(12))), First: first, Last: first + r.IntN(8)}
		}
		p, err := newProblem(reqs, nil)
		require.NoError(t, err)
		sorted := byFirstStep(p.items)
		d := newDecoder(p.items, buildConflicts(p.items, sorted), make([][]interval, len(reqs)))
		_, greedy, ok := newSearcher(d, p.lb, 0).run(greedyOrders)
		require.True(t, ok)
		for _, opts := range [][]Option{nil, {WithTries(0)}, {WithTries(300)}, {WithTimeLimit(time.Minute), WithTries(0)}} {
			res, err := Plan(reqs, opts...)
			require.NoError(t, err)
			require.NoError(t, Validate(reqs, res.Offsets))
			require.LessOrEqual(t, res.ArenaBytes, greedy, "trial %d", trial)
		}
	}
}
