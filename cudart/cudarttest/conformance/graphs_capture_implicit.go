package conformance

import (
	"runtime"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// perThreadStream is cudaStreamPerThread, the handle CUDA defines as 0x2:
// the calling OS thread's default stream, a blocking stream that the legacy
// default stream waits for.
const perThreadStream cudart.Stream = 2

// testCaptureImplicit: while a blocking stream captures, created or
// cudaStreamPerThread alike, a call that would make the legacy default
// stream or the device wait for it is refused and invalidates the capture:
// a query or synchronisation of the legacy stream, a cudaMemcpy or a
// cudaMemset on it, cudaStreamSynchronize of the capturing stream and
// cudaDeviceSynchronize. CUDA 13.0 on an H200 answers
// cudaErrorStreamCaptureImplicit for the legacy stream and
// cudaErrorStreamCaptureUnsupported for the others, and the capture ends
// with cudaErrorStreamCaptureInvalidated. cudaFree and cudaFreeHost, which
// synchronise, are refused as well, and cudaMalloc in a global capture.
func (s *suite) testCaptureImplicit(t *testing.T, g cudart.Graphs) {
	ks := s.loadKernels(t)
	st, created := s.stream(t)
	const n = 1024
	y := s.malloc(t, 4*n)
	host := s.pinned(t, 4*n)
	forbidden := []struct {
		name string
		call func(capturing cudart.Stream) error
		want error
	}{
		{"LegacyStreamQuery", func(cudart.Stream) error { _, err := st.StreamQuery(s.dev, 0); return err }, cudart.ErrStreamCaptureImplicit},
		{"LegacyStreamSynchronize", func(cudart.Stream) error { return st.StreamSynchronize(s.dev, 0) }, cudart.ErrStreamCaptureImplicit},
		{"Memcpy", func(cudart.Stream) error {
			return s.rt.Memcpy(s.dev, cudart.HostMem(host), cudart.DeviceMem(y, 4*n), cudart.DeviceToHost)
		}, cudart.ErrStreamCaptureImplicit},
		{"Memset", func(cudart.Stream) error { return s.rt.Memset(s.dev, y, 0, 4*n) }, cudart.ErrStreamCaptureImplicit},
		{"StreamSynchronize", func(c cudart.Stream) error { return st.StreamSynchronize(s.dev, c) }, cudart.ErrStreamCaptureUnsupported},
		{"DeviceSynchronize", func(cudart.Stream) error { return s.rt.DeviceSynchronize(s.dev) }, cudart.ErrStreamCaptureUnsupported},
	}
	// Frees synchronise the device too; what CUDA answers them with during
	// a capture is reported, and only that it refuses them asserted (the
	// fake's tests hold it to cudaDeviceSynchronize's answer).
	freed := s.malloc(t, 256)
	freedHost := s.pinned(t, 256)
	frees := []struct {
		name string
		call func() error
	}{
		{"Free", func() error { return s.rt.Free(s.dev, freed) }},
		{"FreeHost", func() error { return s.rt.FreeHost(freedHost) }},
	}
	for _, capturing := range []struct {
		name   string
		stream cudart.Stream
	}{{"Created", created}, {"PerThread", perThreadStream}} {
		capture := func(t *testing.T, what string, call func() error, want error) {
			// cudaStreamPerThread is this OS thread's stream, and a global
			// capture ends on the thread that began it.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			stream := capturing.stream
			require.NoError(t, g.StreamBeginCapture(s.dev, stream, cudart.CaptureModeGlobal))
			require.NoError(t, ks.fillLaunch(s.dev, y, n, 5, stream))
			err := call()
			t.Logf("%s while the %s stream captures: %v", what, capturing.name, err)
			graph, end := g.StreamEndCapture(s.dev, stream)
			t.Logf("then the capture ends with: %v", end)
			if want != nil {
				assert.ErrorIs(t, err, want, what)
				assert.ErrorIs(t, end, cudart.ErrStreamCaptureInvalidated, "the capture ends invalid")
				assert.Zero(t, graph)
			} else {
				assert.Error(t, err, "%s is refused", what)
			}
			if graph != 0 {
				assert.NoError(t, g.GraphDestroy(s.dev, graph))
			}

			require.NoError(t, ks.fillLaunch(s.dev, y, n, 6, stream), "the stream runs work again")
			require.NoError(t, st.StreamSynchronize(s.dev, stream))
			w := s.words(t, y, n)
			assert.Equal(t, [2]uint32{6, 6}, [2]uint32{w[0], w[n-1]})
		}
		for _, c := range forbidden {
			t.Run(capturing.name+"/"+c.name, func(t *testing.T) {
				capture(t, c.name, func() error { return c.call(capturing.stream) }, c.want)
			})
		}
		for _, c := range frees {
			t.Run(capturing.name+"/"+c.name, func(t *testing.T) { capture(t, c.name, c.call, nil) })
		}
	}
	t.Run("MallocByMode", func(t *testing.T) { s.testMallocDuringCapture(t, g, st, created) })
	t.Run("InstantiateByMode", func(t *testing.T) { s.testInstantiateDuringCapture(t, g, st, created) })
}

// testInstantiateDuringCapture: cudaGraphInstantiate of a graph whose
// capture has ended, while the thread has another capture under way, is
// refused in a thread-local capture and invalidates it, and allowed in a
// relaxed one. One thread capturing on several devices' streams (an NCCL
// group over them) therefore ends every capture before it instantiates a
// graph: on 2×H200 (CUDA 13.0), instantiating device 0's graph while device
// 1's stream still captured failed with cudaErrorStreamCaptureUnsupported,
// and device 1's capture then ended with cudaErrorStreamCaptureInvalidated.
func (s *suite) testInstantiateDuringCapture(t *testing.T, g cudart.Graphs, st cudart.Streams, stream cudart.Stream) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, other := s.stream(t)
	x := s.malloc(t, 256)
	require.NoError(t, g.StreamBeginCapture(s.dev, other, cudart.CaptureModeThreadLocal))
	require.NoError(t, st.MemsetAsync(s.dev, x, 0x5a, 256, other))
	ended, err := g.StreamEndCapture(s.dev, other)
	require.NoError(t, err)
	once(t, calls.GraphDestroy, func() error { return g.GraphDestroy(s.dev, ended) })
	for _, mode := range []cudart.CaptureMode{cudart.CaptureModeThreadLocal, cudart.CaptureModeRelaxed} {
		require.NoError(t, g.StreamBeginCapture(s.dev, stream, mode))
		exec, err := g.GraphInstantiate(s.dev, ended)
		t.Logf("cudaGraphInstantiate during a capture in %s: %v", mode, err)
		if exec != 0 {
			assert.NoError(t, g.GraphExecDestroy(s.dev, exec))
		}
		end := s.endCapture(t, g, stream)
		if mode == cudart.CaptureModeRelaxed {
			assert.NoError(t, err, "cudaGraphInstantiate in a relaxed capture")
			assert.NoError(t, end, "a relaxed capture ends as usual")
		} else {
			assert.ErrorIs(t, err, cudart.ErrStreamCaptureUnsupported, "cudaGraphInstantiate in a thread-local capture")
			assert.ErrorIs(t, end, cudart.ErrStreamCaptureInvalidated, "the capture it invalidated")
		}
		require.NoError(t, st.StreamSynchronize(s.dev, stream), "the stream is usable")
	}
}

// endCapture ends stream's capture, destroys the graph it made if any, and
// returns and logs how the capture ended.
func (s *suite) endCapture(t *testing.T, g cudart.Graphs, stream cudart.Stream) error {
	t.Helper()
	graph, err := g.StreamEndCapture(s.dev, stream)
	t.Logf("then the capture ends with: %v", err)
	if graph != 0 {
		assert.NoError(t, g.GraphDestroy(s.dev, graph))
	}
	return err
}

// testMallocDuringCapture: cudaMalloc, unsafe during a capture, is refused
// while a global capture is under way, and allowed in a relaxed one, whose
// graph then ends as usual. What CUDA answers is reported.
func (s *suite) testMallocDuringCapture(t *testing.T, g cudart.Graphs, st cudart.Streams, stream cudart.Stream) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, mode := range []cudart.CaptureMode{cudart.CaptureModeGlobal, cudart.CaptureModeRelaxed} {
		require.NoError(t, g.StreamBeginCapture(s.dev, stream, mode))
		p, err := s.rt.Malloc(s.dev, 256)
		t.Logf("cudaMalloc during a capture in %s: %v", mode, err)
		if p != 0 {
			once(t, calls.Free, func() error { return s.rt.Free(s.dev, p) })
		}
		end := s.endCapture(t, g, stream)
		if mode == cudart.CaptureModeRelaxed {
			assert.NoError(t, err, "cudaMalloc in a relaxed capture")
			assert.NoError(t, end, "a relaxed capture ends as usual")
		} else {
			assert.Error(t, err, "cudaMalloc in a global capture")
		}
		require.NoError(t, st.StreamSynchronize(s.dev, stream), "the stream is usable")
	}
}
