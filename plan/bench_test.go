package plan_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/plan"
)

// BenchmarkPlanTraces plans each checked-in inference graph with the default
// search.
func BenchmarkPlanTraces(b *testing.B) {
	files, err := filepath.Glob("testdata/traces/*.json")
	require.NoError(b, err)
	for _, f := range files {
		tr := readTraceFile(b, f)
		b.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(b *testing.B) {
			for b.Loop() {
				_, err := plan.Plan(tr.Tensors)
				require.NoError(b, err)
			}
		})
	}
}

// BenchmarkPlanSynthetic100k plans 100,000 requests of random sizes from
// 256 B to 64 MiB living 1 to 1,000 steps each over 200,000 steps.
func BenchmarkPlanSynthetic100k(b *testing.B) {
	reqs := synthetic(rand.New(rand.NewPCG(1, 100000)), 100000, 200000)
	for b.Loop() {
		_, err := plan.Plan(reqs)
		require.NoError(b, err)
	}
}

// BenchmarkPlanIncremental adds one request to 10,000 placed buffers that
// live for the whole plan, the pool's common case.
func BenchmarkPlanIncremental(b *testing.B) {
	placed := make([]plan.Placed, 10000)
	var off uint64
	r := rand.New(rand.NewPCG(3, 4))
	for i := range placed {
		size := 256 + r.Uint64N(1<<20)
		placed[i] = plan.Placed{Request: plan.Request{Size: size, Last: wholePlan}, Offset: off}
		off += (size + 255) &^ 255
	}
	reqs := []plan.Request{{Size: 1 << 20, Last: wholePlan}}
	for b.Loop() {
		_, err := plan.Plan(reqs, plan.WithPlaced(placed))
		require.NoError(b, err)
	}
}

func readTraceFile(tb testing.TB, path string) *plan.Trace {
	f, err := os.Open(path)
	require.NoError(tb, err)
	defer f.Close()
	tr, err := plan.ReadTrace(f)
	require.NoError(tb, err)
	return tr
}

// synthetic returns n requests of random sizes from 256 B to 64 MiB, each
// alive for 1 to 1,000 consecutive steps out of steps.
func synthetic(r *rand.Rand, n, steps int) []plan.Request {
	reqs := make([]plan.Request, n)
	for i := range reqs {
		life := 1 + r.IntN(1000)
		first := r.IntN(steps - life + 1)
		reqs[i] = plan.Request{Size: 256 + r.Uint64N(64<<20-256+1), First: first, Last: first + life - 1}
	}
	return reqs
}
