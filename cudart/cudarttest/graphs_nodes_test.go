package cudarttest_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// captureKernels captures n launches of a probe kernel on a new stream of
// device 0 of f and returns the graph.
func captureKernels(t *testing.T, f *cudarttest.Fake, n int) cudart.Graph {
	t.Helper()
	fn := loadProbe(t, f, func(*cudarttest.KernelContext) error { return nil })
	s, err := f.StreamCreate(0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.StreamDestroy(0, s) })
	require.NoError(t, f.StreamBeginCapture(0, s, cudart.CaptureModeRelaxed))
	for range n {
		require.NoError(t, f.LaunchKernel(0, fn, cudart.Dim1(1), cudart.Dim1(1), 0, s, cudart.Arg[cudart.DevicePtr](0), cudart.Arg[uint64](0)))
	}
	g, err := f.StreamEndCapture(0, s)
	require.NoError(t, err)
	return g
}

// TestFakeGraphNodesCallsAsTheBinding: the fake asks cudaGraphGetNodes
// twice, for the count and for the nodes, as the binding does, so a fault
// injected into either fails GraphNodes; a graph with no node needs only
// the first.
func TestFakeGraphNodesCallsAsTheBinding(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	g := captureKernels(t, f, 3)
	defer func() { assert.NoError(t, f.GraphDestroy(0, g)) }()
	f.ResetCalls()
	nodes, err := f.GraphNodes(0, g)
	require.NoError(t, err)
	assert.Len(t, nodes, 3)
	assert.Equal(t, []string{"cudaGraphGetNodes", "cudaGraphGetNodes"}, f.Calls())
	for nth := 1; nth <= 2; nth++ {
		require.NoError(t, f.FailCallNth("cudaGraphGetNodes", nth, 999))
		_, err = f.GraphNodes(0, g)
		assert.ErrorIs(t, err, cudart.NewError("", 999), "call %d fails", nth)
	}
	empty := captureKernels(t, f, 0)
	defer func() { assert.NoError(t, f.GraphDestroy(0, empty)) }()
	f.ResetCalls()
	nodes, err = f.GraphNodes(0, empty)
	require.NoError(t, err)
	assert.Empty(t, nodes)
	assert.Equal(t, []string{"cudaGraphGetNodes"}, f.Calls())
}

// TestFakeGraphNodeHandles: a node is valid while its graph lives, on its
// graph's device; a graph's nodes are its own, and outlive no destroy or
// reset.
func TestFakeGraphNodeHandles(t *testing.T) {
	f := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	g := captureKernels(t, f, 2)
	nodes, err := f.GraphNodes(0, g)
	require.NoError(t, err)
	require.Len(t, nodes, 2)
	assert.NotEqual(t, nodes[0], nodes[1])
	typ, err := f.GraphNodeType(0, nodes[1])
	require.NoError(t, err)
	assert.Equal(t, cudart.GraphNodeKernel, typ)
	_, err = f.GraphNodeType(1, nodes[0])
	assert.ErrorIs(t, err, cudart.ErrInvalidResourceHandle, "a node of device 0's graph")
	_, err = f.GraphNodes(1, g)
	assert.ErrorIs(t, err, cudart.ErrInvalidResourceHandle, "a graph of device 0")
	_, err = f.GraphNodeType(0, cudart.GraphNode(g))
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "a graph is not a node")

	x, err := f.GraphInstantiate(0, g)
	require.NoError(t, err)
	require.NoError(t, f.GraphDestroy(0, g))
	_, err = f.GraphNodeType(0, nodes[0])
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "the node of a destroyed graph, though its instantiation lives")
	_, err = f.GraphNodes(0, g)
	assert.ErrorIs(t, err, cudart.ErrInvalidResourceHandle)
	require.NoError(t, f.GraphExecDestroy(0, x))

	g = captureKernels(t, f, 1)
	nodes, err = f.GraphNodes(0, g)
	require.NoError(t, err)
	require.NoError(t, f.DeviceReset(0))
	_, err = f.GraphNodeType(0, nodes[0])
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "the reset destroyed its graph")
}

// TestFakeCapturedEventWaitOnItsStream: the capturing stream may wait for
// an event it recorded in the same capture, which adds no node; another
// stream may not wait for it (the fake does not join captures), nor may the
// stream in a later capture.
func TestFakeCapturedEventWaitOnItsStream(t *testing.T) {
	f := cudarttest.NewFakeT(t)
	e, err := f.EventCreate(0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.EventDestroy(0, e)) }()
	var s [2]cudart.Stream
	for i := range s {
		s[i], err = f.StreamCreate(0)
		require.NoError(t, err)
		defer func() { assert.NoError(t, f.StreamDestroy(0, s[i])) }()
	}
	require.NoError(t, f.StreamBeginCapture(0, s[0], cudart.CaptureModeRelaxed))
	require.NoError(t, f.EventRecord(0, e, s[0]))
	require.NoError(t, f.StreamWaitEvent(0, s[0], e))
	assert.ErrorIs(t, f.StreamWaitEvent(0, s[1], e), cudart.ErrNotSupported)
	g, err := f.StreamEndCapture(0, s[0])
	require.NoError(t, err)
	defer func() { assert.NoError(t, f.GraphDestroy(0, g)) }()
	counts, err := cudart.CountGraphNodes(f, 0, g)
	require.NoError(t, err)
	assert.Zero(t, counts.Total(), "%s", counts)

	require.NoError(t, f.StreamBeginCapture(0, s[0], cudart.CaptureModeRelaxed))
	assert.ErrorIs(t, f.StreamWaitEvent(0, s[0], e), cudart.ErrNotSupported, "recorded in the capture before")
	g2, err := f.StreamEndCapture(0, s[0])
	require.NoError(t, err)
	require.NoError(t, f.GraphDestroy(0, g2))
}
