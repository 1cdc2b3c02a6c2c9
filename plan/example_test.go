package plan_test

import (
	"fmt"

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
