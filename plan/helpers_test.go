package plan_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

const wholePlan = math.MaxInt32

// randomRequests returns n requests over about steps steps: mostly short
// lifetimes, some long, a few for the whole plan, sizes from a byte to a
// few MiB and alignments from 1 to 64 KiB.
func randomRequests(r *rand.Rand, n, steps int) []plan.Request {
	reqs := make([]plan.Request, n)
	for i := range reqs {
		first := r.IntN(steps)
		life := r.IntN(4)
		if r.IntN(5) == 0 {
			life = r.IntN(steps)
		}
		req := plan.Request{Size: 1 + r.Uint64N(1<<(8+r.IntN(14))), First: first, Last: first + life}
		if r.IntN(4) == 0 {
			req.Align = 1 << r.IntN(17)
		}
		if r.IntN(40) == 0 {
			req.First, req.Last = 0, wholePlan
		}
		reqs[i] = req
	}
	return reqs
}

// placedPlan plans reqs and returns them as placed buffers.
func placedPlan(t testing.TB, reqs []plan.Request) []plan.Placed {
	res, err := plan.Plan(reqs)
	require.NoError(t, err)
	placed := make([]plan.Placed, len(reqs))
	for i, r := range reqs {
		placed[i] = plan.Placed{Request: r, Offset: res.Offsets[i]}
	}
	return placed
}

// together returns new and placed requests and offsets as one plan.
func together(reqs []plan.Request, offs []uint64, placed []plan.Placed) ([]plan.Request, []uint64) {
	all := append([]plan.Request(nil), reqs...)
	allOffs := append([]uint64(nil), offs...)
	for _, p := range placed {
		all = append(all, p.Request)
		allOffs = append(allOffs, p.Offset)
	}
	return all, allOffs
}

// overlapping reports by brute force whether two of the requests alive at a
// common step share a byte.
func overlapping(reqs []plan.Request, offs []uint64) bool {
	for i := range reqs {
		for j := range i {
			a, b := reqs[i], reqs[j]
			if a.First > b.Last || b.First > a.Last {
				continue
			}
			ea, eb := offs[i]+footprint(a), offs[j]+footprint(b)
			if offs[i] < eb && offs[j] < ea {
				return true
			}
		}
	}
	return false
}

func footprint(r plan.Request) uint64 { return (r.Size + 255) &^ 255 }

// checkPlan asserts everything a plan promises: one aligned offset per
// request, no overlap (by brute force, not by Validate alone), an arena that
// covers every buffer and is not below the lower bound.
func checkPlan(t testing.TB, reqs []plan.Request, placed []plan.Placed, res *plan.Result) {
	t.Helper()
	require.Len(t, res.Offsets, len(reqs))
	all, offs := together(reqs, res.Offsets, placed)
	var top uint64
	for i, r := range all {
		al := max(r.Align, 256)
		require.Zero(t, offs[i]%al, "request %d offset %d not aligned to %d", i, offs[i], al)
		top = max(top, offs[i]+footprint(r))
	}
	for i, p := range placed {
		require.Equal(t, p.Offset, offs[len(reqs)+i], "placed buffer %d moved", i)
	}
	require.False(t, overlapping(all, offs), "plan overlaps")
	require.NoError(t, plan.Validate(all, offs))
	require.Equal(t, top, res.ArenaBytes, "arena is the highest end")
	lb, err := plan.LowerBound(all)
	require.NoError(t, err)
	require.Equal(t, lb, res.LowerBound)
	require.GreaterOrEqual(t, res.ArenaBytes, res.LowerBound)
}
