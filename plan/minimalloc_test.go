package plan_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

// TestMiniMallocFits asks for layouts of the challenging instances that the
// search fits in well under a second, within their capacity; the others
// take seconds each and are left to BenchmarkMiniMalloc.
func TestMiniMallocFits(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds of search")
	}
	for _, name := range []string{"F", "G", "J", "K"} {
		t.Run(name, func(t *testing.T) {
			reqs := readCSVFile(t, "testdata/minimalloc/"+name+".1048576.csv")
			greedy, err := plan.Plan(reqs, plan.WithTries(0))
			require.NoError(t, err)
			require.Greater(t, greedy.ArenaBytes, uint64(1<<28), "the greedy planners alone do not fit")
			res, err := plan.Plan(reqs, plan.WithCapacity(1<<28))
			require.NoError(t, err)
			checkPlan(t, reqs, nil, res)
			assert.LessOrEqual(t, res.ArenaBytes, uint64(1<<28))
		})
	}
}
