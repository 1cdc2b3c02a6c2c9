package conformance_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/nccl"
	"github.com/cudapool/cudapool/nccl/conformance"
)

// TestNCCLCUDA runs the suite on real CUDA over every visible GPU. It skips,
// saying why, where CUDA or NCCL cannot be loaded or fewer than two devices
// are visible.
func TestNCCLCUDA(t *testing.T) {
	lib, err := cudart.Open()
	if err != nil {
		t.Skipf("CUDA not available: %v", err)
	}
	t.Cleanup(func() { assert.NoError(t, lib.Close()) })
	count, err := lib.DeviceCount()
	if err != nil || count < 2 {
		t.Skipf("NCCL's suite needs two GPUs or more: %d visible (%v)", count, err)
	}
	if _, err := nccl.Open(lib); err != nil {
		t.Skipf("NCCL not available: %v", err)
	}
	devs := make([]int, count)
	for i := range devs {
		devs[i] = i
	}
	conformance.TestNCCL(t, lib, devs)
}
