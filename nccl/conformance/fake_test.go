package conformance_test

import (
	"fmt"
	"testing"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/nccl/conformance"
)

// TestNCCLFake runs the suite on the fake with 2 and 4 devices, each able
// to access every other's memory as the GPUs of an NVLink host can, and
// fails if it leaves anything allocated.
func TestNCCLFake(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("devices=%d", n), func(t *testing.T) {
			opts := []cudarttest.Option{cudarttest.WithDevices(n)}
			for a := range n {
				for b := a + 1; b < n; b++ {
					opts = append(opts, cudarttest.WithPeerAccess(a, b))
				}
			}
			f := cudarttest.NewFakeT(t, opts...)
			devs := make([]int, n)
			for i := range devs {
				devs[i] = i
			}
			conformance.TestNCCL(t, f, devs)
		})
	}
}
