package plan_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

// TestMiniMallocFits asks for layouts of three of the challenging instances
// (H and I were the hardest to fit, J has the most buffers) within their
// capacity, which the greedy planners alone miss. All eleven, and their
// timings, are BenchmarkMiniMalloc's business.
func TestMiniMallocFits(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds of search")
	}
	for _, name := range []string{"H", "I", "J"} {
		t.Run(name, func(t *testing.T) {
			reqs := readCSVFile(t, "testdata/minimalloc/"+name+".1048576.csv")
			greedy, err := plan.Plan(reqs, plan.WithTries(0))
			require.NoError(t, err)
			require.Greater(t, greedy.ArenaBytes, uint64(1<<28), "the greedy planners alone do not fit")
			// A generous limit: the race detector slows the search tenfold.
			res, err := plan.Plan(reqs, plan.WithCapacity(1<<28), plan.WithTimeLimit(time.Minute))
			require.NoError(t, err)
			checkPlan(t, reqs, nil, res)
			assert.LessOrEqual(t, res.ArenaBytes, uint64(1<<28))
		})
	}
}
