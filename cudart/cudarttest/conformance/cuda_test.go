package conformance_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest/conformance"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// TestConformanceCUDA runs the conformance suite on real CUDA. It skips,
// saying why, where CUDA cannot be loaded or there is no device.
func TestConformanceCUDA(t *testing.T) {
	lib, err := cudart.Open()
	if err != nil {
		t.Skipf("CUDA not available: %v", err)
	}
	t.Cleanup(func() { assert.NoError(t, lib.Close()) })
	count, err := lib.DeviceCount()
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	if count == 0 {
		t.Skip("no CUDA device: cudaGetDeviceCount reports 0")
	}
	var rt cudart.Runtime = lib
	if d, ok := rt.(cudart.Device); ok {
		name, err := d.DeviceName(0)
		require.NoError(t, err)
		rv, err := d.RuntimeVersion()
		require.NoError(t, err)
		dv, err := d.DriverVersion()
		require.NoError(t, err)
		t.Logf("device 0 of %d: %s, CUDA runtime %d, driver %d", count, name, rv, dv)
	}
	conformance.TestRuntime(t, rt)
}
