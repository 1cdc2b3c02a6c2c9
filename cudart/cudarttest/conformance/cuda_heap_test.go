package conformance

import (
	"os"
	"os/exec"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// heapChildEnv marks the process TestCUDAMallocHeapFixedAtFirstLaunch starts
// to run its scenario in a CUDA context of its own.
const heapChildEnv = "CUDAPOOL_HEAP_CHILD"

// heapFixedAtFirstLaunch: with the default heap, a kernel's malloc of 16 MiB
// gets NULL, and raising LimitMallocHeapSize after that kernel has run is
// refused with cudaErrorInvalidValue, as CUDA documents and an H100 with
// CUDA 13.0 does.
func heapFixedAtFirstLaunch(t *testing.T, rt cudart.Full) {
	limit, err := rt.DeviceGetLimit(0, cudart.LimitMallocHeapSize)
	require.NoError(t, err)
	require.Equal(t, uint64(8*mib), limit, "CUDA's default heap")
	registerSuiteKernels(rt)
	m, err := rt.ModuleLoadData(0, suiteHeapPTX)
	require.NoError(t, err)
	defer func() { assert.NoError(t, rt.ModuleUnload(0, m)) }()
	fn, err := rt.ModuleGetFunction(0, m, "heap")
	require.NoError(t, err)
	out, err := rt.Malloc(0, 4)
	require.NoError(t, err)
	defer func() { assert.NoError(t, rt.Free(0, out)) }()
	got := func(size uint64) byte {
		require.NoError(t, rt.Memset(0, out, 0xff, 4))
		require.NoError(t, rt.LaunchKernel(0, fn, cudart.Dim1(1), cudart.Dim1(1), 0, 0, cudart.Arg(out), cudart.Arg(size)))
		require.NoError(t, rt.DeviceSynchronize(0))
		b := make([]byte, 4)
		require.NoError(t, rt.Memcpy(0, cudart.HostMem(b), cudart.DeviceMem(out, 4), cudart.DeviceToHost))
		return b[0]
	}
	assert.Equal(t, byte(0), got(16*mib), "16 MiB of the default 8 MiB heap: NULL")
	assert.Equal(t, byte(1), got(mib), "1 MiB fits")
	err = rt.DeviceSetLimit(0, cudart.LimitMallocHeapSize, 64*mib)
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "the heap is fixed once a kernel that calls malloc has run")
	t.Logf("raising the heap after a malloc kernel ran: %v", err)
	assert.Equal(t, byte(0), got(16*mib), "still the default heap")
}

func TestFakeMallocHeapFixedAtFirstLaunch(t *testing.T) {
	heapFixedAtFirstLaunch(t, cudarttest.NewFakeT(t))
}

// TestCUDAMallocHeapFixedAtFirstLaunch runs heapFixedAtFirstLaunch on a GPU,
// in a child process: the heap it fixes would otherwise stay fixed for the
// rest of this process's tests.
func TestCUDAMallocHeapFixedAtFirstLaunch(t *testing.T) {
	if os.Getenv(heapChildEnv) == "" {
		lib, err := cudart.Open()
		if err != nil {
			t.Skipf("CUDA not available: %v", err)
		}
		n, err := lib.DeviceCount()
		require.NoError(t, lib.Close())
		if err != nil || n == 0 {
			t.Skipf("no CUDA device: %v", err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestCUDAMallocHeapFixedAtFirstLaunch$", "-test.v")
		cmd.Env = append(os.Environ(), heapChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		require.NoError(t, err)
		return
	}
	lib, err := cudart.Open()
	require.NoError(t, err)
	heapFixedAtFirstLaunch(t, lib)
}
