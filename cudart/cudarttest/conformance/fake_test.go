package conformance_test

import (
	"fmt"
	"testing"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/cudart/cudarttest/conformance"
)

// TestConformanceFake runs the suite on the fake, on each of two devices so
// that the suite's device ordinals are exercised, and fails if the suite
// leaves anything allocated.
func TestConformanceFake(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	for d := range 2 {
		t.Run(fmt.Sprintf("device%d", d), func(t *testing.T) {
			conformance.TestRuntime(t, f, conformance.OnDevice(d))
		})
	}
}
