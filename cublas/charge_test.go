package cublas_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart/cudarttest"
)

// The fake charges what the conformance suite's BLASCharge measured: the
// first handle of a device's context loads cuBLAS's kernels and keeps them
// (2 MiB) until a reset ends the context, which the suite cannot show on
// CUDA, where earlier tests of the process may have loaded them.
func TestTheFirstHandleKeepsCUBLASsKernelsUntilAReset(t *testing.T) {
	const mib = 1 << 20
	rt := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	l, err := cublas.Open(rt)
	require.NoError(t, err)
	free := func(dev int) int64 {
		f, _, err := rt.MemGetInfo(dev)
		require.NoError(t, err)
		return int64(f)
	}
	cycle := func(dev int) (took, kept int64) {
		before := free(dev)
		h, err := l.NewHandle(dev, 0)
		require.NoError(t, err)
		took = before - free(dev)
		require.NoError(t, h.Close())
		return took, before - free(dev)
	}
	for _, tc := range []struct {
		name       string
		dev        int
		took, kept int64
	}{
		{"first handle of device 0", 0, 68 * mib, 2 * mib},
		{"second handle of device 0", 0, 66 * mib, 0},
		{"first handle of device 1", 1, 68 * mib, 2 * mib},
	} {
		took, kept := cycle(tc.dev)
		require.Equal(t, tc.took, took, "%s: taken", tc.name)
		require.Equal(t, tc.kept, kept, "%s: kept after cublasDestroy", tc.name)
	}
	before := free(0)
	require.NoError(t, rt.DeviceReset(0))
	require.Equal(t, int64(2*mib), free(0)-before, "the reset gives the kernels' memory back")
	took, kept := cycle(0)
	require.Equal(t, int64(68*mib), took, "the context after the reset loads them again")
	require.Equal(t, int64(2*mib), kept)
}

// A handle made while another is live takes HandleCharge, on the fake as
// the conformance suite's BLASCharge measured on CUDA.
func TestAHandleTakesHandleCharge(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	l, err := cublas.Open(rt)
	require.NoError(t, err)
	first, err := l.NewHandle(0, 0)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, first.Close()) })
	before, _, err := rt.MemGetInfo(0)
	require.NoError(t, err)
	h, err := l.NewHandle(0, 0)
	require.NoError(t, err)
	after, _, err := rt.MemGetInfo(0)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.Equal(t, uint64(cublas.HandleCharge), before-after)
}

// A device too full for a handle fails NewHandle with ErrAllocFailed,
// saying that a handle takes about 64 MiB outside any pool.
func TestAHandleThatDoesNotFitSaysWhatItTakes(t *testing.T) {
	rt := cudarttest.NewFakeT(t, cudarttest.WithDeviceMemory(256<<20))
	l, err := cublas.Open(rt)
	require.NoError(t, err)
	free, _, err := rt.MemGetInfo(0)
	require.NoError(t, err)
	p, err := rt.Malloc(0, free-32<<20)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Free(0, p)) })
	_, err = l.NewHandle(0, 0)
	require.ErrorIs(t, err, cublas.ErrAllocFailed)
	require.ErrorContains(t, err, "a handle takes about 64 MiB of device memory outside any pool (HandleCharge)")
}
