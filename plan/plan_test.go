package plan_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

// TestPlanProperties plans random inputs and checks that every plan is
// valid, not below the lower bound, and the same when planned again.
func TestPlanProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		reqs := randomRequests(r, 1+r.IntN(120), 1+r.IntN(60))
		res, err := plan.Plan(reqs)
		require.NoError(t, err, "trial %d", trial)
		checkPlan(t, reqs, nil, res)
		again, err := plan.Plan(reqs)
		require.NoError(t, err)
		require.Equal(t, res, again, "trial %d: not deterministic", trial)
	}
}

// TestPlanAroundPlaced plans random requests around a random valid plan of
// placed buffers, which must stay where they are.
func TestPlanAroundPlaced(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		placed := placedPlan(t, randomRequests(r, 1+r.IntN(60), 1+r.IntN(40)))
		reqs := randomRequests(r, 1+r.IntN(60), 1+r.IntN(40))
		res, err := plan.Plan(reqs, plan.WithPlaced(placed))
		require.NoError(t, err, "trial %d", trial)
		checkPlan(t, reqs, placed, res)
		again, err := plan.Plan(reqs, plan.WithPlaced(placed))
		require.NoError(t, err)
		require.Equal(t, res, again, "trial %d: not deterministic", trial)
	}
}

// TestPlanWholePlanStacks adds whole-plan requests one at a time, as the
// pool does for buffers without lifetimes: each goes right on top.
func TestPlanWholePlanStacks(t *testing.T) {
	var placed []plan.Placed
	var top uint64
	for i, size := range []uint64{1000, 256, 1 << 20, 3, 4096} {
		req := plan.Request{Size: size, Last: wholePlan}
		res, err := plan.Plan([]plan.Request{req}, plan.WithPlaced(placed))
		require.NoError(t, err)
		require.Equal(t, top, res.Offsets[0], "buffer %d", i)
		top += footprint(req)
		assert.Equal(t, top, res.ArenaBytes)
		assert.Equal(t, top, res.LowerBound)
		placed = append(placed, plan.Placed{Request: req, Offset: res.Offsets[0]})
	}
}

// TestPlanFillsGapBetweenPlaced checks that a new buffer takes a gap left
// between placed ones when it fits, the smallest such gap.
func TestPlanFillsGapBetweenPlaced(t *testing.T) {
	placed := []plan.Placed{
		{Request: plan.Request{Size: 1024, Last: 10}, Offset: 0},
		{Request: plan.Request{Size: 1024, Last: 10}, Offset: 4096},
		{Request: plan.Request{Size: 1024, Last: 10}, Offset: 6144},
		{Request: plan.Request{Size: 1024, Last: 10}, Offset: 16384},
	}
	res, err := plan.Plan([]plan.Request{{Size: 1000, First: 2, Last: 3}}, plan.WithPlaced(placed))
	require.NoError(t, err)
	assert.Equal(t, []uint64{5120}, res.Offsets, "the 1 KiB gap at 5120 is the best fit")
	assert.Equal(t, uint64(17408), res.ArenaBytes)
}

// TestPlanReusesDeadBytes is the point of planning: buffers that are never
// alive together share bytes, where giving each its own would need the sum.
func TestPlanReusesDeadBytes(t *testing.T) {
	var reqs []plan.Request
	for i := range 100 {
		reqs = append(reqs, plan.Request{Size: 1 << 20, First: i, Last: i + 1})
	}
	res, err := plan.Plan(reqs)
	require.NoError(t, err)
	assert.Equal(t, uint64(2<<20), res.ArenaBytes)
	assert.Equal(t, uint64(2<<20), res.LowerBound)
}

func TestPlanHonoursAlignment(t *testing.T) {
	reqs := []plan.Request{
		{Size: 300, First: 0, Last: 1},
		{Size: 300, Align: 4096, First: 0, Last: 1},
		{Size: 300, Align: 1 << 20, First: 1, Last: 2},
		{Size: 300, Align: 16, First: 1, Last: 1},
	}
	res, err := plan.Plan(reqs)
	require.NoError(t, err)
	checkPlan(t, reqs, nil, res)
	assert.Zero(t, res.Offsets[1]%4096)
	assert.Zero(t, res.Offsets[2]%(1<<20))
	assert.Zero(t, res.Offsets[3]%256, "alignments below 256 are raised to 256")
}

func TestPlanEmpty(t *testing.T) {
	res, err := plan.Plan(nil)
	require.NoError(t, err)
	assert.Empty(t, res.Offsets)
	assert.Zero(t, res.ArenaBytes)

	placed := []plan.Placed{{Request: plan.Request{Size: 512, Last: 3}, Offset: 1024}}
	res, err = plan.Plan(nil, plan.WithPlaced(placed))
	require.NoError(t, err)
	assert.Equal(t, uint64(1536), res.ArenaBytes)
	assert.Equal(t, uint64(512), res.LowerBound)
}

// TestPlanHugeSteps shows steps are compared, never enumerated: lifetimes
// spanning billions of steps plan as fast as short ones.
func TestPlanHugeSteps(t *testing.T) {
	reqs := []plan.Request{
		{Size: 1 << 10, First: 0, Last: math.MaxInt},
		{Size: 1 << 10, First: math.MaxInt - 1, Last: math.MaxInt},
		{Size: 1 << 10, First: 1 << 40, Last: 1<<40 + 1},
		{Size: 1 << 10, First: 1<<40 + 2, Last: 1 << 50},
	}
	res, err := plan.Plan(reqs)
	require.NoError(t, err)
	checkPlan(t, reqs, nil, res)
	assert.Equal(t, uint64(2048), res.ArenaBytes)
}

// TestPlanWithTries checks that WithTries(0) and a longer greedy search
// both give valid plans, and that the longer search pays somewhere. (That
// no plan is above the greedy planners' own is TestNeverAboveGreedy's.)
func TestPlanWithTries(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	improved := false
	for range 100 {
		reqs := randomRequests(r, 50+r.IntN(100), 30)
		greedy, err := plan.Plan(reqs, plan.WithTries(0))
		require.NoError(t, err)
		checkPlan(t, reqs, nil, greedy)
		searched, err := plan.Plan(reqs, plan.WithTries(500))
		require.NoError(t, err)
		checkPlan(t, reqs, nil, searched)
		improved = improved || searched.ArenaBytes < greedy.ArenaBytes
	}
	assert.True(t, improved, "the search should beat the greedy orders somewhere")
}

func TestPlanRejectsInvalid(t *testing.T) {
	ok := plan.Request{Size: 256, First: 0, Last: 1}
	tests := []struct {
		name    string
		reqs    []plan.Request
		placed  []plan.Placed
		want    error
		message string
	}{
		{"zero size", []plan.Request{ok, {Size: 0}}, nil, plan.ErrInvalidRequest, "request 1"},
		{"alignment not a power of two", []plan.Request{{Size: 1, Align: 384}}, nil, plan.ErrInvalidRequest, "alignment 384"},
		{"negative first", []plan.Request{ok, ok, {Size: 1, First: -1}}, nil, plan.ErrInvalidRequest, "request 2"},
		{"last before first", []plan.Request{{Size: 1, First: 5, Last: 3}}, nil, plan.ErrInvalidRequest, "last (3) < first (5)"},
		{"size overflows", []plan.Request{{Size: math.MaxUint64 - 10}}, nil, plan.ErrOverflow, "request 0"},
		{"sum overflows", []plan.Request{{Size: 1 << 63}, {Size: 1 << 63}}, nil, plan.ErrOverflow, "2^64"},
		{"placed invalid", []plan.Request{ok}, []plan.Placed{{Request: plan.Request{Size: 0}}}, plan.ErrInvalidRequest, "placed buffer 0"},
		{"placed misaligned", []plan.Request{ok}, []plan.Placed{{Request: ok, Offset: 100}}, plan.ErrInvalidRequest, "offset 100"},
		{"placed past 2^64", []plan.Request{ok}, []plan.Placed{{Request: ok, Offset: math.MaxUint64 &^ 255}}, plan.ErrOverflow, "placed buffer 0"},
		{"no room around placed", []plan.Request{{Size: 512, Last: 2}}, []plan.Placed{
			{Request: plan.Request{Size: 1 << 63, Last: 0}, Offset: 0},
			{Request: plan.Request{Size: 1<<63 - 256, First: 2, Last: 2}, Offset: 1 << 63},
		}, plan.ErrOverflow, "below 2^64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plan.Plan(tt.reqs, plan.WithPlaced(tt.placed))
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.message)
		})
	}
}

func TestLowerBound(t *testing.T) {
	tests := []struct {
		name string
		reqs []plan.Request
		want uint64
	}{
		{"none", nil, 0},
		{"rounded to 256", []plan.Request{{Size: 1}}, 256},
		{"disjoint steps", []plan.Request{{Size: 512, Last: 1}, {Size: 1024, First: 2, Last: 3}}, 1024},
		{"inclusive ends meet", []plan.Request{{Size: 512, Last: 2}, {Size: 1024, First: 2, Last: 3}}, 1536},
		{"peak in the middle", []plan.Request{{Size: 256, Last: 9}, {Size: 256, First: 3, Last: 4}, {Size: 256, First: 4, Last: 5}}, 768},
		{"whole plan", []plan.Request{{Size: 256, Last: wholePlan}, {Size: 256, First: 1 << 30, Last: 1 << 30}}, 512},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plan.LowerBound(tt.reqs)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestLowerBoundMatchesStepByStep compares the sweep with a sum at every
// step on inputs small enough to enumerate.
func TestLowerBoundMatchesStepByStep(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		reqs := make([]plan.Request, 1+r.IntN(40))
		for i := range reqs {
			first := r.IntN(30)
			reqs[i] = plan.Request{Size: 1 + r.Uint64N(5000), First: first, Last: first + r.IntN(10)}
		}
		var want uint64
		for step := range 40 {
			var alive uint64
			for _, q := range reqs {
				if q.First <= step && step <= q.Last {
					alive += footprint(q)
				}
			}
			want = max(want, alive)
		}
		got, err := plan.LowerBound(reqs)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

func TestLowerBoundErrors(t *testing.T) {
	_, err := plan.LowerBound([]plan.Request{{Size: 1}, {Size: 1, First: 2, Last: 1}})
	require.ErrorIs(t, err, plan.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "request 1")
	_, err = plan.LowerBound([]plan.Request{{Size: math.MaxUint64 / 2}, {Size: math.MaxUint64 / 2}, {Size: 1 << 20}})
	require.ErrorIs(t, err, plan.ErrOverflow)
	assert.False(t, errors.Is(err, plan.ErrInvalidRequest))
}

// TestPlanLargeInput plans an input with millions of conflicting pairs,
// which takes the one-pass sweep instead of the search, with some buffers
// placed first.
func TestPlanLargeInput(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	reqs := make([]plan.Request, 12000)
	for i := range reqs {
		first := r.IntN(12000)
		reqs[i] = plan.Request{Size: 1 + r.Uint64N(1<<24), First: first, Last: first + r.IntN(500)}
	}
	placed := placedPlan(t, reqs[:200])
	reqs = reqs[200:]
	res, err := plan.Plan(reqs, plan.WithPlaced(placed))
	require.NoError(t, err)
	all, offs := together(reqs, res.Offsets, placed)
	require.NoError(t, plan.Validate(all, offs))
	lb, err := plan.LowerBound(all)
	require.NoError(t, err)
	assert.Equal(t, lb, res.LowerBound)
	assert.GreaterOrEqual(t, res.ArenaBytes, lb)
	assert.Less(t, float64(res.ArenaBytes)/float64(lb), 1.5, "best fit in step order stays near the bound")
	again, err := plan.Plan(reqs, plan.WithPlaced(placed))
	require.NoError(t, err)
	assert.Equal(t, res, again)
}
