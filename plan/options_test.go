package plan_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

func TestPlanRefusesOptions(t *testing.T) {
	reqs := []plan.Request{{Size: 256, Last: 1}}
	tests := []struct {
		name    string
		opt     plan.Option
		message string
	}{
		{"nil option", nil, "plan: invalid option: option 2 of 2 is nil"},
		{"zero capacity", plan.WithCapacity(0), "plan: invalid option: WithCapacity(0): a capacity is 1 B or more"},
		{"zero time limit", plan.WithTimeLimit(0), "plan: invalid option: WithTimeLimit(0s): a time limit is positive"},
		{"negative time limit", plan.WithTimeLimit(-time.Second), "plan: invalid option: WithTimeLimit(-1s): a time limit is positive"},
		//lint:ignore SA1012 a nil context is what is tested
		{"nil context", plan.WithContext(nil), "plan: invalid option: WithContext(nil): pass context.Background() for none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := plan.Plan(reqs, plan.WithTries(1), tt.opt)
			require.Error(t, err)
			assert.Nil(t, res)
			assert.ErrorIs(t, err, plan.ErrInvalidOption)
			assert.EqualError(t, err, tt.message)
		})
	}
}

// TestCapacityBelowLowerBound is refused at once, with the greedy layout
// and a proof.
func TestCapacityBelowLowerBound(t *testing.T) {
	reqs := []plan.Request{{Size: 4096, Last: 3}, {Size: 2048, First: 2, Last: 5}}
	for _, capacity := range []uint64{1, 2048, 6143} {
		res, err := plan.Plan(reqs, plan.WithCapacity(capacity))
		var nf *plan.NoFitError
		require.ErrorAs(t, err, &nf)
		assert.ErrorIs(t, err, plan.ErrNoFit)
		assert.True(t, nf.Proven)
		assert.Equal(t, capacity, nf.Capacity)
		assert.Equal(t, uint64(6144), nf.LowerBound)
		require.NotNil(t, res, "the best layout comes back with the error")
		assert.Equal(t, res.ArenaBytes, nf.BestArena)
		checkPlan(t, reqs, nil, res)
		assert.Contains(t, err.Error(), "more bytes than that are alive at one step (lower bound 6.0 KiB")
	}
	res, err := plan.Plan(reqs, plan.WithCapacity(6144))
	require.NoError(t, err)
	assert.Equal(t, uint64(6144), res.ArenaBytes)
}

func readCSVFile(tb testing.TB, path string) []plan.Request {
	f, err := os.Open(path)
	require.NoError(tb, err)
	defer f.Close()
	reqs, err := plan.ReadCSV(f, 256)
	require.NoError(tb, err)
	return reqs
}

// TestCapacitySearchStops gives a hard instance a context that is already
// done: the search stops at once and says that it proved nothing.
func TestCapacitySearchStops(t *testing.T) {
	reqs := readCSVFile(t, "testdata/minimalloc/I.1048576.csv")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := plan.Plan(reqs, plan.WithCapacity(1<<28), plan.WithContext(ctx))
	var nf *plan.NoFitError
	require.ErrorAs(t, err, &nf)
	assert.False(t, nf.Proven)
	assert.Contains(t, err.Error(), "the search ended before finding one")
	require.NotNil(t, res)
	checkPlan(t, reqs, nil, res)
	assert.Greater(t, res.ArenaBytes, uint64(1<<28))
}

// TestCapacityProvenInfeasible asks small random inputs whose optimum is
// above their lower bound for one allocation unit less than the optimum:
// the search must exhaust and say that no layout exists. Alignments are
// what makes such inputs common: the lower bound counts bytes, not the
// padding that alignment forces between buffers.
func TestCapacityProvenInfeasible(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	found := 0
	for trial := 0; trial < 3000 && found < 20; trial++ {
		reqs := make([]plan.Request, 5+r.IntN(6))
		for i := range reqs {
			first := r.IntN(6)
			reqs[i] = plan.Request{Size: 256 * (1 + r.Uint64N(12)), First: first, Last: first + r.IntN(4)}
			if r.IntN(3) == 0 {
				reqs[i].Align = 512 << r.IntN(2)
			}
		}
		best, err := plan.Plan(reqs, plan.WithTimeLimit(time.Minute))
		require.NoError(t, err)
		if best.ArenaBytes == best.LowerBound {
			continue
		}
		found++
		res, err := plan.Plan(reqs, plan.WithCapacity(best.ArenaBytes-256))
		var nf *plan.NoFitError
		require.ErrorAs(t, err, &nf, "trial %d: %v", trial, reqs)
		assert.True(t, nf.Proven, "trial %d", trial)
		assert.Contains(t, err.Error(), "the search proved that none exists")
		assert.True(t, errors.Is(err, plan.ErrNoFit))
		checkPlan(t, reqs, nil, res)
	}
	require.GreaterOrEqual(t, found, 10, "too few inputs whose optimum is above the lower bound")
}
