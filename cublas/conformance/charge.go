package conformance

import (
	"fmt"
	"os"
	"testing"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// testBLASCharge: what a cuBLAS handle takes of the device, outside any
// allocation the program sees, as measured with cuBLAS 13.1 on H100 hosts of
// 1, 2 and 4 GPUs alike, whatever CUDA_VISIBLE_DEVICES leaves visible: the
// first handle of the device's context loads cuBLAS's kernels and keeps
// them, 2 MiB, until the context ends; then 64 MiB a handle, and 2 MiB more
// while the device has any handle. Which handle loads the kernels depends
// on what ran before in the process, so a first handle made and destroyed
// tells: it keeps 2 MiB or nothing. With CUDA_MODULE_LOADING=EAGER, CUDA
// loads every kernel of cuBLAS at the first handle instead (392 MiB more on
// an H100), which the fake does not follow: the test skips.
func (s *suite) testBLASCharge(t *testing.T) {
	if os.Getenv("CUDA_MODULE_LOADING") == "EAGER" {
		t.Skip("CUDA_MODULE_LOADING=EAGER: CUDA loads all of cuBLAS's kernels at the first handle")
	}
	l := s.openBLAS(t)
	free := func() uint64 {
		f, _, err := s.rt.MemGetInfo(s.dev)
		require.NoError(t, err, "cudaMemGetInfo")
		return f
	}
	var hs []*cublas.Handle
	t.Cleanup(func() {
		for _, h := range hs {
			assert.NoError(t, h.Close())
		}
	})
	before := free()
	first, err := l.NewHandle(s.dev, 0)
	require.NoError(t, err)
	took := int64(before) - int64(free())
	require.NoError(t, first.Close())
	kept := int64(before) - int64(free())
	require.Contains(t, []int64{0, 2 * mib}, kept, "what the first handle kept after cublasDestroy: cuBLAS's kernels, 2 MiB, if no handle loaded them before in the process")
	require.Equal(t, 66*mib+kept, took, "what the first handle took: 64 MiB, 2 MiB while the device has a handle, and the kernels it loaded")
	t.Logf("the first handle took %d B and kept %d B", took, kept)

	before = free()
	var deltas []string
	for i := range 4 {
		h, err := l.NewHandle(s.dev, 0)
		require.NoError(t, err)
		hs = append(hs, h)
		now := free()
		deltas = append(deltas, fmt.Sprintf("handle %d: %d B", i+1, int64(before)-int64(now)))
		before = now
	}
	for i, h := range hs {
		require.NoError(t, h.Close())
		now := free()
		deltas = append(deltas, fmt.Sprintf("close %d: %d B", i+1, int64(now)-int64(before)))
		before = now
	}
	hs = nil
	t.Logf("device memory per cuBLAS handle: %v", deltas)
	want := []string{"handle 1: 69206016 B", "handle 2: 67108864 B", "handle 3: 67108864 B", "handle 4: 67108864 B",
		"close 1: 67108864 B", "close 2: 67108864 B", "close 3: 67108864 B", "close 4: 69206016 B"}
	require.Equal(t, want, deltas, "what each handle takes and gives back")
}
