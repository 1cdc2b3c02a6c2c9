package plan_test

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// BenchmarkRandomTrace plans the random traces of the planner's large-input
// target: first step uniform in 0..2n, lifetime 1 to 1,000 steps, size
// 2^U(8,26) bytes. It reports the arena over the lower bound.
func BenchmarkRandomTrace(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		reqs := logUniformTrace(rand.New(rand.NewPCG(1, uint64(n))), n, 2*n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var res *plan.Result
			for b.Loop() {
				var err error
				res, err = plan.Plan(reqs)
				require.NoError(b, err)
			}
			b.ReportMetric(float64(res.ArenaBytes)/float64(res.LowerBound), "arena/lb")
		})
	}
}

// BenchmarkMiniMalloc asks for a layout of each of MiniMalloc's eleven
// challenging instances within its capacity (256 MiB with 256-byte units),
// reporting the arena over the capacity and whether it fits.
func BenchmarkMiniMalloc(b *testing.B) {
	files, err := filepath.Glob("testdata/minimalloc/*.csv")
	require.NoError(b, err)
	for _, f := range files {
		reqs := readCSVFile(b, f)
		b.Run(strings.SplitN(filepath.Base(f), ".", 2)[0], func(b *testing.B) {
			benchCapacity(b, reqs, 1<<28)
		})
	}
}

// BenchmarkMiniMallocLowerBound asks for layouts of C, D and J, whose
// lower bounds are below the capacity, within the lower bound.
func BenchmarkMiniMallocLowerBound(b *testing.B) {
	for _, name := range []string{"C", "D", "J"} {
		reqs := readCSVFile(b, "testdata/minimalloc/"+name+".1048576.csv")
		lb, err := plan.LowerBound(reqs)
		require.NoError(b, err)
		b.Run(name, func(b *testing.B) { benchCapacity(b, reqs, lb) })
	}
}

// BenchmarkPerfectPackings asks for layouts within the lower bound of
// generated tilings of 100 to 300 buffers, half of them pinwheels that no
// straight line splits, where a layout at the lower bound exists by
// construction.
func BenchmarkPerfectPackings(b *testing.B) {
	r := rand.New(rand.NewPCG(41, 42))
	for trial := range 6 {
		steps, width, pieces := 50+r.IntN(100), 100+r.IntN(400), 100+r.IntN(200)
		pinwheel := trial%2 == 0
		reqs, tiling := perfectPacking(r, steps, width, pieces, pinwheel)
		for pinwheel && straightCut(reqs, tiling, steps, uint64(width)*256) {
			reqs, tiling = perfectPacking(r, steps, width, pieces, true)
		}
		b.Run(fmt.Sprintf("%d/n=%d/pinwheel=%v", trial, len(reqs), pinwheel), func(b *testing.B) {
			benchCapacity(b, reqs, uint64(width)*256)
		})
	}
}

// benchCapacity plans reqs within capacity under the default time limit
// and reports the arena over the capacity and the share of runs that fit.
func benchCapacity(b *testing.B, reqs []plan.Request, capacity uint64) {
	var res *plan.Result
	fits, runs := 0, 0
	for b.Loop() {
		var err error
		res, err = plan.Plan(reqs, plan.WithCapacity(capacity))
		if err != nil {
			require.ErrorIs(b, err, plan.ErrNoFit)
		} else {
			fits++
		}
		runs++
	}
	b.ReportMetric(float64(res.ArenaBytes)/float64(capacity), "arena/cap")
	b.ReportMetric(float64(fits)/float64(runs), "fits")
}

// BenchmarkPlanIncremental adds one request to 10,000 placed buffers that
// live for the whole plan, the pool's common case.
func BenchmarkPlanIncremental(b *testing.B) {
	placed := stackedPlaced()
	reqs := []plan.Request{{Size: 1 << 20, Last: wholePlan}}
	for b.Loop() {
		_, err := plan.Plan(reqs, plan.WithPlaced(placed))
		require.NoError(b, err)
	}
}

// stackedPlaced returns 10,000 whole-plan buffers of 256 B to 1 MiB
// stacked one on another, as the pool places buffers without lifetimes.
func stackedPlaced() []plan.Placed {
	placed := make([]plan.Placed, 10000)
	var off uint64
	r := rand.New(rand.NewPCG(3, 4))
	for i := range placed {
		size := 256 + r.Uint64N(1<<20)
		placed[i] = plan.Placed{Request: plan.Request{Size: size, Last: wholePlan}, Offset: off}
		off += (size + 255) &^ 255
	}
	return placed
}

// BenchmarkCheckCost plans the large inputs, the checked-in traces and
// the incremental case as Plan does, timing apart the search for a layout
// and the check that Plan makes of every layout before returning it:
// check-% is the check's share of the whole, both measured in the same
// iterations.
func BenchmarkCheckCost(b *testing.B) {
	type input struct {
		reqs []plan.Request
		opts []plan.Option
	}
	inputs := map[string]input{
		"synthetic100k": {reqs: synthetic(rand.New(rand.NewPCG(1, 100000)), 100000, 200000)},
		"random100k":    {reqs: logUniformTrace(rand.New(rand.NewPCG(1, 100_000)), 100_000, 200_000)},
		"random1M":      {reqs: logUniformTrace(rand.New(rand.NewPCG(1, 1_000_000)), 1_000_000, 2_000_000)},
		"incremental":   {reqs: []plan.Request{{Size: 1 << 20, Last: wholePlan}}, opts: []plan.Option{plan.WithPlaced(stackedPlaced())}},
	}
	files, err := filepath.Glob("testdata/traces/*.json")
	require.NoError(b, err)
	for _, f := range files {
		inputs["trace_"+strings.TrimSuffix(filepath.Base(f), ".json")] = input{reqs: readTraceFile(b, f).Tensors}
	}
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		in := inputs[name]
		b.Run(name, func(b *testing.B) {
			var find, check time.Duration
			for b.Loop() {
				f, c, err := plan.PlanTimed(in.reqs, in.opts...)
				require.NoError(b, err)
				find += f
				check += c
			}
			b.ReportMetric(float64(check.Nanoseconds())/float64(b.N), "check-ns/op")
			b.ReportMetric(100*float64(check)/float64(find+check), "check-%")
		})
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

// logUniformTrace returns n requests first alive at a step uniform in
// 0..steps, for 1 to 1,000 steps, of 2^U(8,26) bytes.
func logUniformTrace(r *rand.Rand, n, steps int) []plan.Request {
	reqs := make([]plan.Request, n)
	for i := range reqs {
		first := r.IntN(steps + 1)
		reqs[i] = plan.Request{Size: uint64(math.Exp2(8 + 18*r.Float64())), First: first, Last: first + r.IntN(1000)}
	}
	return reqs
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
