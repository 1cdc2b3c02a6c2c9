package cudarttest

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// TestRecordMemNode holds recordMemNode to its contract, for the fake code
// of a library that takes scratch memory in a capture: the nodes land in
// the capture in order with the work around them, allocate and charge
// nothing, run nothing, and nothing is recorded off a capture.
func TestRecordMemNode(t *testing.T) {
	f := NewFakeT(t)
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.StreamDestroy(0, s)) }()
	record := func(typ cudart.GraphNodeType) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.recordMemNode(s, typ)
	}
	p, err := f.Malloc(0, 8)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.Free(0, p)) }()
	free0, _, err := f.MemGetInfo(0)
	require.NoError(t, err)
	assert.False(t, record(cudart.GraphNodeMemAlloc), "the stream does not capture")

	require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeRelaxed))
	assert.True(t, record(cudart.GraphNodeMemAlloc))
	require.NoError(t, f.MemcpyAsync(0, cudart.DeviceMem(p, 4), cudart.DeviceMem(p+4, 4), cudart.DeviceToDevice, s))
	assert.True(t, record(cudart.GraphNodeMemFree))
	g, err := f.StreamEndCapture(0, s)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.GraphDestroy(0, g)) }()
	types, err := cudart.GraphNodeTypes(f, 0, g)
	require.NoError(t, err)
	assert.Equal(t, []cudart.GraphNodeType{cudart.GraphNodeMemAlloc, cudart.GraphNodeMemcpy, cudart.GraphNodeMemFree}, types)
	free1, _, err := f.MemGetInfo(0)
	require.NoError(t, err)
	assert.Equal(t, free0, free1, "nothing charged")

	x, err := f.GraphInstantiate(0, g)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.GraphExecDestroy(0, x)) }()
	require.NoError(t, f.GraphLaunch(0, x, s))
	require.NoError(t, f.StreamSynchronize(0, s))

	assert.PanicsWithError(t, "cudarttest: recordMemNode of a cudaGraphNodeTypeKernel", func() { record(cudart.GraphNodeKernel) })
}
