package cudarttest_test

import (
	"fmt"
	"testing"

	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// TestFakeConformance runs the conformance suite on the fake, on each of two
// devices so that the suite's device ordinals are exercised, and fails if
// the suite leaves anything allocated.
func TestFakeConformance(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	for d := range 2 {
		t.Run(fmt.Sprintf("device%d", d), func(t *testing.T) {
			cudarttest.TestRuntime(t, f, cudarttest.SuiteDevice(d))
		})
	}
}
