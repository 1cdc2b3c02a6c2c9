package conformance

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// testGraphNodes: the nodes of a captured graph, counted by type through
// cudaGraphGetNodes and cudaGraphNodeGetType, are one per piece of captured
// work of a kind that makes a node. Each case logs its whole count, so that
// a run on a GPU shows what CUDA recorded where an assertion fails.
func (s *suite) testGraphNodes(t *testing.T, g cudart.Graphs) {
	ev := need[cudart.Events](t, s.rt)
	ks := s.loadKernels(t)
	st, stream := s.stream(t)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)

	const n = 1024
	host := s.pinned(t, 4*n)
	x := s.malloc(t, 4*n)
	e := s.event(t, ev)
	// capture records work on stream and counts the nodes of its graph.
	capture := func(t *testing.T, work func(t *testing.T)) (cudart.Graph, cudart.GraphNodeCounts) {
		t.Helper()
		require.NoError(t, g.StreamBeginCapture(s.dev, stream, cudart.CaptureModeGlobal))
		work(t)
		graph, err := g.StreamEndCapture(s.dev, stream)
		require.NoError(t, err)
		once(t, calls.GraphDestroy, func() error { return g.GraphDestroy(s.dev, graph) })
		counts, err := cudart.CountGraphNodes(g, s.dev, graph)
		require.NoError(t, err)
		t.Logf("%s", counts)
		return graph, counts
	}

	t.Run("Empty", func(t *testing.T) {
		_, counts := capture(t, func(*testing.T) {})
		assert.Zero(t, counts.Total(), "a capture of nothing is a graph with no node")
	})
	t.Run("KernelAndCopies", func(t *testing.T) {
		_, counts := capture(t, func(t *testing.T) {
			require.NoError(t, st.MemcpyAsync(s.dev, cudart.DeviceMem(x, 4*n), cudart.HostMem(host), cudart.HostToDevice, stream))
			require.NoError(t, ks.fillLaunch(s.dev, x, n, 7, stream))
			require.NoError(t, st.MemcpyAsync(s.dev, cudart.HostMem(host), cudart.DeviceMem(x, 4*n), cudart.DeviceToHost, stream))
		})
		assert.Equal(t, cudart.GraphNodeCounts{cudart.GraphNodeMemcpy: 2, cudart.GraphNodeKernel: 1}, counts)
		assert.Zero(t, counts.Memory())
	})
	// An async memset is a memset node, and the replay sets the bytes.
	t.Run("Memset", func(t *testing.T) {
		require.NoError(t, st.MemsetAsync(s.dev, x, 0x11, 4*n, stream))
		w := s.words(t, x, n)
		assert.Equal(t, [2]uint32{0x11111111, 0x11111111}, [2]uint32{w[0], w[n-1]}, "outside a capture")
		graph, counts := capture(t, func(t *testing.T) {
			require.NoError(t, st.MemsetAsync(s.dev, x, 0x5a, 4*n, stream))
		})
		assert.Equal(t, cudart.GraphNodeCounts{cudart.GraphNodeMemset: 1}, counts)
		exec, err := g.GraphInstantiate(s.dev, graph)
		require.NoError(t, err)
		once(t, calls.GraphExecDestroy, func() error { return g.GraphExecDestroy(s.dev, exec) })
		require.NoError(t, g.GraphLaunch(s.dev, exec, stream))
		require.NoError(t, st.StreamSynchronize(s.dev, stream))
		w = s.words(t, x, n)
		assert.Equal(t, [2]uint32{0x5a5a5a5a, 0x5a5a5a5a}, [2]uint32{w[0], w[n-1]}, "replayed")
	})
	// CUDA documents cudaEventRecordExternal and cudaEventWaitExternal as
	// making event nodes "instead of the default behavior": with the
	// default flags, a record and a wait in a capture are edges, not nodes.
	t.Run("EventRecordAndWait", func(t *testing.T) {
		_, counts := capture(t, func(t *testing.T) {
			require.NoError(t, ks.fillLaunch(s.dev, x, n, 1, stream))
			require.NoError(t, ev.EventRecord(s.dev, e, stream))
			require.NoError(t, ev.StreamWaitEvent(s.dev, stream, e))
			require.NoError(t, ks.fillLaunch(s.dev, x, n, 2, stream))
		})
		assert.Equal(t, cudart.GraphNodeCounts{cudart.GraphNodeKernel: 2}, counts)
	})
	// cudaMallocAsync and cudaFreeAsync in a capture are a memory allocation
	// node and a memory free node, and each launch of the graph allocates
	// and frees the memory again.
	t.Run("MallocAsyncAndFreeAsync", func(t *testing.T) {
		aa := need[cudart.AsyncAllocator](t, s.rt)
		graph, counts := capture(t, func(t *testing.T) {
			p, err := aa.MallocAsync(s.dev, 4*n, stream)
			require.NoError(t, err)
			require.NoError(t, ks.fillLaunch(s.dev, p, n, 9, stream))
			require.NoError(t, st.MemcpyAsync(s.dev, cudart.HostMem(host), cudart.DeviceMem(p, 4*n), cudart.DeviceToHost, stream))
			require.NoError(t, aa.FreeAsync(s.dev, p, stream))
		})
		assert.Equal(t, cudart.GraphNodeCounts{cudart.GraphNodeMemAlloc: 1, cudart.GraphNodeKernel: 1, cudart.GraphNodeMemcpy: 1, cudart.GraphNodeMemFree: 1}, counts)
		assert.Equal(t, 2, counts.Memory())
		exec, err := g.GraphInstantiate(s.dev, graph)
		require.NoError(t, err)
		once(t, calls.GraphExecDestroy, func() error { return g.GraphExecDestroy(s.dev, exec) })
		for replay := range 2 {
			clear(host)
			require.NoError(t, g.GraphLaunch(s.dev, exec, stream))
			require.NoError(t, st.StreamSynchronize(s.dev, stream))
			first, last := binary.LittleEndian.Uint32(host), binary.LittleEndian.Uint32(host[4*(n-1):])
			assert.Equal(t, [2]uint32{9, 9}, [2]uint32{first, last}, "replay %d", replay)
		}
	})
	t.Run("NullHandles", func(t *testing.T) {
		_, err := g.GraphNodes(s.dev, 0)
		assert.ErrorIs(t, err, cudart.ErrInvalidValue, "a null graph")
		t.Logf("null graph: %v", err)
		_, err = g.GraphNodeType(s.dev, 0)
		assert.ErrorIs(t, err, cudart.ErrInvalidValue, "a null node")
		t.Logf("null node: %v", err)
	})
	require.NoError(t, st.StreamSynchronize(s.dev, stream))
}
