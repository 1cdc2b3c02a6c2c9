package conformance_test

import (
	"fmt"
	"testing"

	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/cudart/cudarttest/conformance"
)

// TestConformanceFake runs the suite on the fake, on each of two devices so
// that the suite's device ordinals are exercised, with and without peer
// access between them so that both of the suite's answers to
// DeviceCanAccessPeer are, and fails if the suite leaves anything
// allocated.
func TestConformanceFake(t *testing.T) {
	for _, peers := range []bool{false, true} {
		opts := []cudarttest.Option{cudarttest.WithDevices(2)}
		if peers {
			opts = append(opts, cudarttest.WithPeerAccess(0, 1))
		}
		f := cudarttest.NewFakeT(t, opts...)
		for d := range 2 {
			t.Run(fmt.Sprintf("peers=%t/device%d", peers, d), func(t *testing.T) {
				conformance.TestRuntime(t, f, conformance.OnDevice(d))
			})
		}
	}
}
