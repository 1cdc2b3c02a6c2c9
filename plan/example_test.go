package plan_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/cudapool/cudapool/plan"
)

// A small graph: an input feeds two branches that merge. The input and the
// merge output are never alive together, so they share bytes.
func ExamplePlan() {
	reqs := []plan.Request{
		{Size: 4096, First: 0, Last: 2}, // input, read by both branches
		{Size: 2048, First: 1, Last: 3}, // branch a
		{Size: 2048, First: 2, Last: 3}, // branch b
		{Size: 4096, First: 3, Last: 4}, // merge output
	}
	res, err := plan.Plan(reqs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("offsets:", res.Offsets)
	fmt.Println("arena:", res.ArenaBytes, "lower bound:", res.LowerBound)
	fmt.Println("valid:", plan.Validate(reqs, res.Offsets) == nil)
	// Output:
	// offsets: [0 4096 6144 0]
	// arena: 8192 lower bound: 8192
	// valid: true
}

// Three buffers alive in turn, two at a time, asked to fit in 8 KiB: the
// greedy planners already fit, so no search runs. Asked for less than the
// lower bound, Plan says at once that nothing fits and still returns its
// best layout.
func ExampleWithCapacity() {
	reqs := []plan.Request{
		{Size: 4096, First: 0, Last: 1},
		{Size: 4096, First: 1, Last: 2},
		{Size: 4096, First: 2, Last: 3},
	}
	res, err := plan.Plan(reqs, plan.WithCapacity(8192))
	fmt.Println("arena:", res.ArenaBytes, "error:", err)

	res, err = plan.Plan(reqs, plan.WithCapacity(6144))
	var nf *plan.NoFitError
	if errors.As(err, &nf) {
		fmt.Println("proven:", nf.Proven, "best arena:", res.ArenaBytes)
		fmt.Println(err)
	}
	// Output:
	// arena: 8192 error: <nil>
	// proven: true best arena: 8192
	// plan: no layout fits the capacity (6.0 KiB): more bytes than that are alive at one step (lower bound 8.0 KiB, best arena found 8.0 KiB)
}

// A time limit bounds the exact search that lowers the arena toward the
// lower bound; a search that ends before it gives the same layout as any
// other run.
func ExampleWithTimeLimit() {
	reqs := []plan.Request{
		{Size: 3 << 10, First: 0, Last: 1},
		{Size: 1 << 10, First: 0, Last: 0},
		{Size: 2 << 10, First: 1, Last: 2},
		{Size: 2 << 10, First: 2, Last: 3},
		{Size: 1 << 10, First: 3, Last: 3},
	}
	res, err := plan.Plan(reqs, plan.WithTimeLimit(time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("arena:", res.ArenaBytes, "lower bound:", res.LowerBound)
	fmt.Println("valid:", plan.Validate(reqs, res.Offsets) == nil)
	// Output:
	// arena: 5120 lower bound: 5120
	// valid: true
}
