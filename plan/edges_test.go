package plan_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/internal/checked"
	"github.com/cudapool/cudapool/plan"
)

// issue22MakeSlice made Plan's exact search panic in a goroutine it
// started ("makeslice: len out of range"), ending the process: a last step
// of math.MaxInt overflowed to a negative section bound.
var issue22MakeSlice = []plan.Request{
	{Size: 122624, Align: 8192, First: 4, Last: 12},
	{Size: 256, First: 0, Last: 2},
	{Size: 11776, Align: 2048, First: 3, Last: math.MaxInt},
	{Size: 8960, First: 0, Last: 6},
}

// issue22Overlap made the large-input planner return, with no error, a
// layout in which requests 0 and 1 share bytes: request 0's last step plus
// one wrapped, and the index of placed buffers never saw it.
func issue22Overlap() []plan.Request {
	reqs := []plan.Request{{Size: 256, First: 0, Last: math.MaxInt}}
	for range 637 {
		reqs = append(reqs, plan.Request{Size: 256, First: 0, Last: 0})
	}
	return reqs
}

func TestIssue22Reproductions(t *testing.T) {
	res, err := plan.Plan(issue22MakeSlice)
	require.NoError(t, err)
	checkPlan(t, issue22MakeSlice, nil, res)

	reqs := issue22Overlap()
	res, err = plan.Plan(reqs)
	require.NoError(t, err)
	checkPlan(t, reqs, nil, res)
	assert.Equal(t, uint64(638*256), res.ArenaBytes, "all 638 are alive at step 0")
}

// edgeStep draws a step from the whole range a Request allows, its edges
// most often.
func edgeStep(r *rand.Rand) int {
	switch r.IntN(7) {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return math.MaxInt - 1
	case 3:
		return math.MaxInt
	case 4:
		return math.MaxInt - r.IntN(8)
	case 5:
		return r.IntN(8)
	}
	return r.IntN(math.MaxInt)
}

// edgeSize draws a size from the whole range of uint64, its edges and the
// values near 2^63 and 2^64 most often.
func edgeSize(r *rand.Rand) uint64 {
	switch r.IntN(9) {
	case 0:
		return 1
	case 1:
		return 1<<63 - 256 + r.Uint64N(512)
	case 2:
		return math.MaxUint64 - r.Uint64N(512)
	case 3:
		return 1 << (56 + r.IntN(8))
	case 4:
		return r.Uint64()
	}
	return 1 + r.Uint64N(1<<(8+r.IntN(12)))
}

// edgeRequests returns n requests with steps and sizes from edgeStep and
// edgeSize, a few with alignments.
func edgeRequests(r *rand.Rand, n int) []plan.Request {
	reqs := make([]plan.Request, n)
	for i := range reqs {
		a, b := edgeStep(r), edgeStep(r)
		q := plan.Request{Size: edgeSize(r), First: min(a, b), Last: max(a, b)}
		if r.IntN(4) == 0 {
			q.Align = 1 << r.IntN(24)
		}
		reqs[i] = q
	}
	return reqs
}

// stackable reports whether stacking the requests one on another, each
// aligned, ends below 2^64: then a layout exists and Plan must find one.
func stackable(reqs []plan.Request) bool {
	var top checked.Total
	for _, q := range reqs {
		fp, err := q.Footprint()
		if err != nil {
			return false
		}
		top.Add(fp)
		top.Add(max(q.Align, 256))
	}
	_, ok := top.Uint64()
	return ok
}

// requireEdgePlan plans reqs around placed and checks the answer: a valid
// layout, or a refusal wrapping ErrOverflow only where stacking the
// requests would not fit in 64 bits either.
func requireEdgePlan(t *testing.T, reqs []plan.Request, placed []plan.Placed, opts ...plan.Option) *plan.Result {
	t.Helper()
	res, err := plan.Plan(reqs, append(opts, plan.WithPlaced(placed))...)
	if err != nil {
		require.ErrorIs(t, err, plan.ErrOverflow, "requests %v", reqs)
		require.False(t, errors.Is(err, plan.ErrInternal))
		all, _ := together(reqs, nil, placed)
		require.False(t, stackable(all) && len(placed) == 0, "refused %v, which stack below 2^64: %v", reqs, err)
		return nil
	}
	checkPlan(t, reqs, placed, res)
	return res
}

// shortOr is n trials, or short with -short.
func shortOr(n, short int) int {
	if testing.Short() {
		return short
	}
	return n
}

// TestPlanEdgeValues plans random requests whose steps and sizes come
// from the edges of their ranges, alone, around placed buffers, and in
// numbers that take the large-input planner.
func TestPlanEdgeValues(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 1))
	trials := shortOr(400, 100)
	for range trials {
		reqs := edgeRequests(r, 1+r.IntN(12))
		res := requireEdgePlan(t, reqs, nil, plan.WithTries(20))
		if res == nil || r.IntN(2) == 0 {
			continue
		}
		placed := make([]plan.Placed, len(reqs))
		for i, q := range reqs {
			placed[i] = plan.Placed{Request: q, Offset: res.Offsets[i]}
		}
		requireEdgePlan(t, edgeRequests(r, 1+r.IntN(6)), placed, plan.WithTries(20))
	}
	for range 3 {
		// Enough small requests alive together that Plan sweeps instead
		// of searching, with a few at the edges among them.
		reqs := edgeRequests(r, 8)
		for i := range reqs {
			reqs[i].Size = 1 + r.Uint64N(1<<20)
		}
		for range 700 {
			first := r.IntN(4)
			reqs = append(reqs, plan.Request{Size: 1 + r.Uint64N(4096), First: first, Last: first + r.IntN(2)})
		}
		r.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
		requireEdgePlan(t, reqs, nil)
	}
}

// TestPlanStepsOnlyCompare moves a problem's steps to the top of the int
// range, keeping their order: the lower bound is the same and the layout
// valid, with or without a capacity.
func TestPlanStepsOnlyCompare(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 2))
	for trial := range 100 {
		reqs := randomRequests(r, 2+r.IntN(60), 1+r.IntN(30))
		var steps []int
		for _, q := range reqs {
			steps = append(steps, q.First, q.Last)
		}
		slices.Sort(steps)
		steps = slices.Compact(steps)
		high := make([]plan.Request, len(reqs))
		for i, q := range reqs {
			// The k-th smallest step becomes MaxInt - (distinct steps - 1 - k).
			f, _ := slices.BinarySearch(steps, q.First)
			l, _ := slices.BinarySearch(steps, q.Last)
			q.First, q.Last = math.MaxInt-(len(steps)-1-f), math.MaxInt-(len(steps)-1-l)
			high[i] = q
		}
		low, err := plan.Plan(reqs)
		require.NoError(t, err)
		res, err := plan.Plan(high)
		require.NoError(t, err, "trial %d", trial)
		checkPlan(t, high, nil, res)
		assert.Equal(t, low.LowerBound, res.LowerBound, "trial %d", trial)
		fit, err := plan.Plan(high, plan.WithCapacity(res.LowerBound), plan.WithTimeLimit(20*time.Millisecond))
		if err != nil {
			require.ErrorIs(t, err, plan.ErrNoFit)
		}
		checkPlan(t, high, nil, fit)
	}
}

// TestValidateEdgeValues compares Validate with a check of every pair, in
// exact arithmetic, on requests and offsets from the edges of their
// ranges: offsets near 2^64, steps at math.MaxInt.
func TestValidateEdgeValues(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 4))
	verdicts := map[string]int{}
	for range 3000 {
		reqs := edgeRequests(r, 1+r.IntN(6))
		offs := make([]uint64, len(reqs))
		for i := range offs {
			switch r.IntN(3) {
			case 0:
				offs[i] = math.MaxUint64&^255 - 256*r.Uint64N(8)
			case 1:
				offs[i] = 1<<63 - 256*r.Uint64N(8)
			default:
				offs[i] = 256 * r.Uint64N(16)
			}
			offs[i] &^= max(reqs[i].Align, 256) - 1
		}
		err := plan.Validate(reqs, offs)
		switch {
		case slices.ContainsFunc(reqs, func(q plan.Request) bool { _, err := q.Footprint(); return err != nil }):
			verdicts["unplannable"]++
			require.ErrorIs(t, err, plan.ErrOverflow)
		case pastTop(reqs, offs):
			verdicts["past 2^64"]++
			require.ErrorIs(t, err, plan.ErrOverflow)
		case overlapping(reqs, offs):
			verdicts["overlap"]++
			require.ErrorIs(t, err, plan.ErrOverlap)
		default:
			verdicts["valid"]++
			require.NoError(t, err)
		}
	}
	for _, v := range []string{"unplannable", "past 2^64", "overlap", "valid"} {
		assert.Greater(t, verdicts[v], 50, "%s: %v", v, verdicts)
	}
}

// pastTop reports whether some request would end past 2^64.
func pastTop(reqs []plan.Request, offs []uint64) bool {
	for i, q := range reqs {
		fp, _ := q.Footprint()
		if _, ok := checked.Add(offs[i], fp); !ok {
			return true
		}
	}
	return false
}
