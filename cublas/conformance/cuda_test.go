package conformance_test

import (
	"testing"

	blasconformance "github.com/cudapool/cudapool/cublas/conformance"
	"github.com/cudapool/cudapool/cudart/cudarttest/conformance"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/runtimeenv"
)

// TestConformanceCUDA runs the runtime's suite with cuBLAS's groups on real
// CUDA: BLAS and BLASCharge, then Reset in the same process. It skips,
// saying why, where CUDA cannot be loaded or has no device; the groups skip
// where cuBLAS cannot be loaded.
func TestConformanceCUDA(t *testing.T) {
	lib, desc, err := runtimeenv.CUDA()
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	t.Cleanup(func() { assert.NoError(t, lib.Close()) })
	t.Log(desc)
	conformance.TestRuntime(t, lib, conformance.WithGroups(blasconformance.Groups()...))
}
