package conformance_test

import (
	"fmt"
	"testing"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/nccl/conformance"
)

// TestNCCLFake runs the suite on the fake with 2 and 4 devices, and fails if
// it leaves anything allocated.
func TestNCCLFake(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("devices=%d", n), func(t *testing.T) {
			f := cudarttest.NewFakeT(t, cudarttest.WithDevices(n))
			devs := make([]int, n)
			for i := range devs {
				devs[i] = i
			}
			conformance.TestNCCL(t, f, devs)
		})
	}
}
