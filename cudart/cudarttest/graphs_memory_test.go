package cudarttest_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// captureStream is a new stream of device 0 of f, capturing.
func captureStream(t *testing.T, f *cudarttest.Fake) cudart.Stream {
	t.Helper()
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.StreamDestroy(0, s)) })
	require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeRelaxed))
	return s
}

// TestFakeGraphMemoryLivesWithTheGraph: memory a capture allocates and
// frees stays at its address while the graph or an instantiation of it
// lives, for every replay to use, and goes back to the device with the last
// of them.
func TestFakeGraphMemoryLivesWithTheGraph(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	free0, _, err := f.MemGetInfo(0)
	require.NoError(t, err)
	s := captureStream(t, f)
	p, err := f.MallocAsync(0, 3<<20, s)
	require.NoError(t, err)
	require.NoError(t, f.MemcpyAsync(0, cudart.DeviceMem(p, 4), cudart.HostMem([]byte{1, 2, 3, 4}), cudart.HostToDevice, s))
	require.NoError(t, f.FreeAsync(0, p, s))
	assert.ErrorIs(t, f.FreeAsync(0, p, s), cudart.ErrInvalidValue, "freed twice in the capture")
	g, err := f.StreamEndCapture(0, s)
	require.NoError(t, err)
	counts, err := cudart.CountGraphNodes(f, 0, g)
	require.NoError(t, err)
	assert.Equal(t, cudart.GraphNodeCounts{cudart.GraphNodeMemAlloc: 1, cudart.GraphNodeMemcpy: 1, cudart.GraphNodeMemFree: 1}, counts)

	x, err := f.GraphInstantiate(0, g)
	require.NoError(t, err)
	require.NoError(t, f.GraphDestroy(0, g))
	assert.Equal(t, 1, f.Live().AsyncAllocs, "the instantiation holds the memory")
	assert.ErrorIs(t, f.FreeAsync(0, p, 0), cudart.ErrInvalidValue, "the graph frees its own memory")
	assert.ErrorIs(t, f.Free(0, p), cudart.ErrInvalidValue)
	for range 2 {
		require.NoError(t, f.GraphLaunch(0, x, s))
		require.NoError(t, f.StreamSynchronize(0, s))
	}
	require.NoError(t, f.GraphExecDestroy(0, x))
	assert.Zero(t, f.Live().AsyncAllocs)
	free1, _, err := f.MemGetInfo(0)
	require.NoError(t, err)
	assert.Equal(t, free0, free1)
}

// TestFakeGraphMemoryNotFreedInItsCapture: the fake refuses what it does
// not model, memory a capture allocates and leaves to the program, and
// frees it; a failed capture frees what it allocated too.
func TestFakeGraphMemoryNotFreedInItsCapture(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	s := captureStream(t, f)
	p, err := f.MallocAsync(0, 256, s)
	require.NoError(t, err)
	other, err := f.StreamCreate(0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.StreamDestroy(0, other)) }()
	assert.ErrorIs(t, f.FreeAsync(0, p, other), cudart.ErrNotSupported, "freed outside its capture")
	_, err = f.StreamEndCapture(0, s)
	assert.ErrorIs(t, err, cudart.ErrNotSupported)
	assert.ErrorContains(t, err, "not freed in it")
	assert.Zero(t, f.Live().AsyncAllocs)

	require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeRelaxed))
	_, err = f.MallocAsync(0, 256, s)
	require.NoError(t, err)
	assert.ErrorIs(t, f.StreamSynchronize(0, s), cudart.ErrStreamCaptureUnsupported)
	_, err = f.StreamEndCapture(0, s)
	assert.ErrorIs(t, err, cudart.ErrStreamCaptureInvalidated)
	assert.Zero(t, f.Live().AsyncAllocs)
}

// TestFakeCapturedFreeOfOlderMemory: a capture's cudaFreeAsync of memory
// allocated before it is a memory free node that frees it when the graph
// runs, once.
func TestFakeCapturedFreeOfOlderMemory(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	p, err := f.MallocAsync(0, 256, 0)
	require.NoError(t, err)
	s := captureStream(t, f)
	require.NoError(t, f.FreeAsync(0, p, s))
	g, err := f.StreamEndCapture(0, s)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.GraphDestroy(0, g)) }()
	counts, err := cudart.CountGraphNodes(f, 0, g)
	require.NoError(t, err)
	assert.Equal(t, cudart.GraphNodeCounts{cudart.GraphNodeMemFree: 1}, counts)
	x, err := f.GraphInstantiate(0, g)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.GraphExecDestroy(0, x)) }()
	require.NoError(t, f.GraphLaunch(0, x, s))
	require.NoError(t, f.StreamSynchronize(0, s))
	assert.Zero(t, f.Live().AsyncAllocs)
}
