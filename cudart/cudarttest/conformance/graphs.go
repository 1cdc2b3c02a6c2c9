package conformance

import (
	"math"
	"runtime"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// testGraphs: a chain of copies and kernels captured on a stream replays
// from a graph, and a call CUDA forbids during capture is refused, ends the
// capture invalid, and leaves the stream usable.
func (s *suite) testGraphs(t *testing.T, g cudart.Graphs) {
	ks := s.loadKernels(t)
	st, stream := s.stream(t)
	// A global capture must end on the OS thread that began it.
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)

	const n = 4096
	in, out := s.pinned(t, 4*n), s.pinned(t, 4*n)
	x, y := s.malloc(t, 4*n), s.malloc(t, 4*n)
	t.Run("CaptureAndReplay", func(t *testing.T) {
		require.NoError(t, g.StreamBeginCapture(s.dev, stream, cudart.CaptureModeGlobal))
		require.NoError(t, st.MemcpyAsync(s.dev, cudart.DeviceMem(x, 4*n), cudart.HostMem(in), cudart.HostToDevice, stream))
		require.NoError(t, ks.fillLaunch(s.dev, y, n, math.Float32bits(1), stream))
		require.NoError(t, ks.k.LaunchKernel(s.dev, ks.axpy, cudart.Dim1(n/128), cudart.Dim1(128), 0, stream,
			cudart.Arg(y), cudart.Arg(x), cudart.Arg[float32](2), cudart.Arg[uint32](n)))
		require.NoError(t, st.MemcpyAsync(s.dev, cudart.HostMem(out), cudart.DeviceMem(y, 4*n), cudart.DeviceToHost, stream))
		graph, err := g.StreamEndCapture(s.dev, stream)
		require.NoError(t, err)
		require.NotZero(t, graph)
		exec, err := g.GraphInstantiate(s.dev, graph)
		require.NoError(t, err)
		once(t, calls.GraphExecDestroy, func() error { return g.GraphExecDestroy(s.dev, exec) })
		require.NoError(t, g.GraphDestroy(s.dev, graph), "the instantiation outlives its graph")

		for replay, scale := range []float32{1, 3} {
			putFloats(in, func(i int) float32 { return scale * float32(i) })
			clear(out)
			require.NoError(t, g.GraphLaunch(s.dev, exec, stream))
			require.NoError(t, st.StreamSynchronize(s.dev, stream))
			for i, v := range getFloats(out) {
				require.Equal(t, 2*scale*float32(i)+1, v, "replay %d, element %d", replay, i)
			}
		}
	})
	forbidden := []struct {
		name string
		call func() error
		want error
	}{
		{"StreamSynchronize", func() error { return st.StreamSynchronize(s.dev, stream) }, cudart.ErrStreamCaptureUnsupported},
		{"StreamQuery", func() error { _, err := st.StreamQuery(s.dev, stream); return err }, cudart.ErrStreamCaptureUnsupported},
		{"Memcpy", func() error {
			return s.rt.Memcpy(s.dev, cudart.DeviceMem(x, 4*n), cudart.HostMem(in), cudart.HostToDevice)
		}, cudart.ErrStreamCaptureImplicit},
		{"DeviceSynchronize", func() error { return s.rt.DeviceSynchronize(s.dev) }, cudart.ErrStreamCaptureUnsupported},
	}
	for _, c := range forbidden {
		t.Run("Forbidden"+c.name, func(t *testing.T) {
			require.NoError(t, g.StreamBeginCapture(s.dev, stream, cudart.CaptureModeGlobal))
			require.NoError(t, ks.fillLaunch(s.dev, y, n, 5, stream))
			err := c.call()
			assert.ErrorIs(t, err, c.want, "%s while the stream captures", c.name)
			t.Logf("%s during capture: %v", c.name, err)
			graph, err := g.StreamEndCapture(s.dev, stream)
			assert.ErrorIs(t, err, cudart.ErrStreamCaptureInvalidated, "the capture ends invalid")
			t.Logf("then: %v", err)
			assert.Zero(t, graph)

			require.NoError(t, ks.fillLaunch(s.dev, y, n, 6, stream), "the stream runs work again")
			require.NoError(t, st.StreamSynchronize(s.dev, stream))
			w := s.words(t, y, n)
			assert.Equal(t, [2]uint32{6, 6}, [2]uint32{w[0], w[n-1]})
		})
	}
}

// testCapturedEvent: the host cannot query or wait for an event last
// recorded in a capture. CUDA 13.0 on an H100 answers the query with
// cudaErrorCapturedEvent and the wait with cudaErrorInvalidValue, and the
// capture ends invalidated.
func (s *suite) testCapturedEvent(t *testing.T, g cudart.Graphs) {
	ev := need[cudart.Events](t, s.rt)
	st, stream := s.stream(t)
	e := s.event(t, ev)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	require.NoError(t, g.StreamBeginCapture(s.dev, stream, cudart.CaptureModeGlobal))
	require.NoError(t, ev.EventRecord(s.dev, e, stream))
	_, err := ev.EventQuery(s.dev, e)
	assert.ErrorIs(t, err, cudart.ErrCapturedEvent, "EventQuery")
	err = ev.EventSynchronize(s.dev, e)
	assert.ErrorIs(t, err, cudart.ErrInvalidValue, "EventSynchronize")
	_, err = g.StreamEndCapture(s.dev, stream)
	assert.ErrorIs(t, err, cudart.ErrStreamCaptureInvalidated)

	require.NoError(t, ev.EventRecord(s.dev, e, stream), "the event records outside a capture again")
	require.NoError(t, ev.EventSynchronize(s.dev, e))
	require.NoError(t, st.StreamSynchronize(s.dev, stream))
}
