package conformance_test

import (
	"fmt"
	"testing"

	blasconformance "github.com/cudapool/cudapool/cublas/conformance"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/cudart/cudarttest/conformance"
)

// TestConformanceFake runs the runtime's suite with cuBLAS's groups on the
// fake, on each of two devices, so that a handle's stream of the other
// device is refused, and fails if the suite leaves anything allocated.
func TestConformanceFake(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	for d := range 2 {
		t.Run(fmt.Sprintf("device%d", d), func(t *testing.T) {
			conformance.TestRuntime(t, f, conformance.OnDevice(d), conformance.WithGroups(blasconformance.Groups()...))
		})
	}
}
