package conformance

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// testBLAS: cuBLAS on the runtime's memory. GEMMs of every type pair the
// binding offers, plain and strided-batched, transposed or not, with padded
// leading dimensions, agree with float64 within the cublas package's
// documented bound; the same bad arguments get the same statuses; a
// workspace is checked; a graph captured with a workspace holds kernels only.
func (s *suite) testBLAS(t *testing.T) {
	st := need[cudart.Streams](t, s.rt)
	l := s.openBLAS(t)
	v, err := l.Version()
	require.NoError(t, err, "Version")
	t.Logf("cuBLAS %s from %s", v, l.Path())
	require.GreaterOrEqual(t, v.Major, 12, "the binding takes cuBLAS 12 or 13")

	_, stream := s.stream(t)
	h := s.handle(t, l, stream)
	mode, err := h.MathMode()
	require.NoError(t, err)
	require.Equal(t, cublas.MathDefault, mode, "TF32 is off on a new handle")
	ws := devMem{s.malloc(t, 32<<20), 32 << 20, s.dev}
	require.NoError(t, h.SetWorkspace(ws), "SetWorkspace")

	t.Run("Gemm", func(t *testing.T) {
		cases := []gemmCase{
			{"FP32/NN", cublas.Float32, cublas.Float32, cublas.NoTrans, cublas.NoTrans, 37, 19, 53, 1, 0, 1, 0},
			{"FP32/TN/beta", cublas.Float32, cublas.Float32, cublas.Trans, cublas.NoTrans, 64, 33, 128, 1, 3, 0.5, 2},
			{"FP32/NT/padded", cublas.Float32, cublas.Float32, cublas.NoTrans, cublas.Trans, 17, 64, 9, 1, 5, -1, 0},
			{"FP32/TT", cublas.Float32, cublas.Float32, cublas.Trans, cublas.Trans, 8, 8, 1000, 1, 0, 1, 0},
			{"FP32/Batched", cublas.Float32, cublas.Float32, cublas.NoTrans, cublas.NoTrans, 31, 17, 45, 4, 2, 1, 1},
			{"FP16/NN", cublas.Float16, cublas.Float16, cublas.NoTrans, cublas.NoTrans, 64, 32, 96, 1, 0, 1, 0},
			{"FP16/FP32out/TN", cublas.Float16, cublas.Float32, cublas.Trans, cublas.NoTrans, 40, 24, 72, 1, 8, 1, 1},
			{"FP16/Batched", cublas.Float16, cublas.Float16, cublas.NoTrans, cublas.Trans, 32, 16, 48, 3, 0, 2, 0},
			{"BF16/NN", cublas.BFloat16, cublas.BFloat16, cublas.NoTrans, cublas.NoTrans, 48, 40, 80, 1, 0, 1, 0},
			{"BF16/FP32out/NT", cublas.BFloat16, cublas.Float32, cublas.NoTrans, cublas.Trans, 33, 65, 31, 1, 1, 1, 0.25},
			{"BF16/Batched", cublas.BFloat16, cublas.Float32, cublas.Trans, cublas.Trans, 16, 16, 64, 5, 0, 1, 0},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { s.runGemm(t, h, st, stream, c, false) })
		}
		t.Run("FP32/TF32", func(t *testing.T) {
			require.NoError(t, h.SetMathMode(cublas.MathTF32))
			t.Cleanup(func() { assert.NoError(t, h.SetMathMode(cublas.MathDefault)) })
			s.runGemm(t, h, st, stream, gemmCase{"tf32", cublas.Float32, cublas.Float32, cublas.NoTrans, cublas.NoTrans, 128, 128, 256, 1, 0, 1, 0}, true)
		})
	})

	t.Run("IEEE", func(t *testing.T) { s.testGemmIEEE(t, h, st, stream) })

	t.Run("BadArguments", func(t *testing.T) {
		p := s.malloc(t, 64*64*4)
		f32 := func(ld int) cublas.Matrix { return cublas.Matrix{Ptr: p, Type: cublas.Float32, LD: ld} }
		base := cublas.Gemm{M: 16, N: 16, K: 16, Alpha: 1, A: f32(16), B: f32(16), C: f32(16)}
		with := func(f func(g *cublas.Gemm)) cublas.Gemm { g := base; f(&g); return g }
		// The binding refuses each before cuBLAS sees it, naming the
		// argument, with the status cuBLAS returned for it (measured with
		// cuBLAS 13.1 when cuBLAS still saw them).
		for _, c := range []struct {
			name string
			g    cublas.Gemm
			want error
			says string
		}{
			{"LDATooSmall", with(func(g *cublas.Gemm) { g.A.LD = 15 }), cublas.ErrInvalidValue, "lda = 15 is less than max(1, 16), the rows of A as stored (M, as TransA is N)"},
			{"LDATooSmallTransposed", with(func(g *cublas.Gemm) { g.TransA, g.K, g.A.LD = cublas.Trans, 20, 16 }), cublas.ErrInvalidValue, "lda = 16 is less than max(1, 20), the rows of A as stored (K, as TransA is T)"},
			{"LDBTooSmall", with(func(g *cublas.Gemm) { g.B.LD = 8 }), cublas.ErrInvalidValue, "ldb = 8 is less than max(1, 16)"},
			{"LDCTooSmall", with(func(g *cublas.Gemm) { g.C.LD = 15 }), cublas.ErrInvalidValue, "ldc = 15 is less than max(1, 16)"},
			{"NegativeM", with(func(g *cublas.Gemm) { g.M = -1 }), cublas.ErrInvalidValue, "M = -1"},
			{"NegativeK", with(func(g *cublas.Gemm) { g.K = -1 }), cublas.ErrInvalidValue, "K = -1"},
			{"BadOp", with(func(g *cublas.Gemm) { g.TransA = 7 }), cublas.ErrInvalidValue, "TransA = cublasOperation_t(7)"},
			{"NullA", with(func(g *cublas.Gemm) { g.A.Ptr = 0 }), cublas.ErrInvalidValue, "A is at address 0"},
			{"NullB", with(func(g *cublas.Gemm) { g.B.Ptr = 0 }), cublas.ErrInvalidValue, "B is at address 0"},
			{"NullC", with(func(g *cublas.Gemm) { g.C.Ptr = 0 }), cublas.ErrInvalidValue, "C is at address 0"},
			{"MixedAB", with(func(g *cublas.Gemm) { g.B.Type = cublas.Float16 }), cublas.ErrNotSupported, "A and B must have one type"},
			{"FP32InFP16Out", with(func(g *cublas.Gemm) { g.C.Type = cublas.Float16 }), cublas.ErrNotSupported, "C must be of their type or Float32"},
			{"FP16InBF16Out", with(func(g *cublas.Gemm) { g.A.Type, g.B.Type, g.C.Type = cublas.Float16, cublas.Float16, cublas.BFloat16 }), cublas.ErrNotSupported, "C must be of their type or Float32"},
		} {
			t.Run(c.name, func(t *testing.T) {
				err := h.Gemm(c.g)
				require.ErrorIs(t, err, c.want, "Gemm(%v)", c.g)
				var e *cublas.Error
				require.ErrorAs(t, err, &e)
				assert.Contains(t, err.Error(), "refused before cuBLAS: ")
				assert.Contains(t, err.Error(), c.says)
				t.Logf("%v", err)
			})
		}
		t.Run("NegativeBatch", func(t *testing.T) {
			// cuBLAS 13.1 checks the batch count only when it launches.
			require.ErrorIs(t, h.GemmStridedBatched(base, -1), cublas.ErrExecutionFailed)
		})
		t.Run("EmptyIsANoOp", func(t *testing.T) {
			require.NoError(t, h.Gemm(with(func(g *cublas.Gemm) { g.M, g.A.Ptr, g.B.Ptr, g.C.Ptr = 0, 0, 0, 0 })))
			require.NoError(t, h.GemmStridedBatched(base, 0))
		})
		require.NoError(t, st.StreamSynchronize(s.dev, stream), "no bad argument left work that faults")
	})

	t.Run("Workspace", func(t *testing.T) {
		h2 := s.handle(t, l, stream)
		small := devMem{ws.p, cublas.MinWorkspace - 1, s.dev}
		require.ErrorIs(t, h2.SetWorkspace(small), cublas.ErrInvalidWorkspace)
		kept, err := h2.Workspace()
		require.NoError(t, err)
		require.True(t, kept == nil, "a refused workspace is not kept")
		other := devMem{ws.p, ws.n, s.dev + 1}
		require.ErrorIs(t, h2.SetWorkspace(other), cublas.ErrInvalidWorkspace, "a workspace on another device")
		// cuBLAS takes a workspace at address 0 (measured on an H100), and
		// its next GEMM faults the device: the binding refuses it.
		require.ErrorIs(t, h2.SetWorkspace(devMem{0, ws.n, s.dev}), cublas.ErrInvalidWorkspace, "a workspace at address 0")
		s.gemmOn(t, st, h2, s.dev, stream)
		require.NoError(t, h2.SetWorkspace(ws))
		_, stream2 := s.stream(t)
		require.NoError(t, h2.SetStream(stream2))
		kept, err = h2.Workspace()
		require.NoError(t, err)
		require.Equal(t, cublas.Workspace(ws), kept, "SetStream keeps the workspace")
		require.NoError(t, h2.Close())
		require.NoError(t, h2.Close(), "a second Close")
		require.ErrorIs(t, h2.Gemm(cublas.Gemm{}), cublas.ErrClosed)
	})

	t.Run("MissingDevice", func(t *testing.T) {
		// A device past the last is the runtime's cudaErrorInvalidDevice,
		// said as such, not a refused stream; nothing is made.
		count, err := s.rt.DeviceCount()
		require.NoError(t, err)
		_, err = l.NewHandle(count, 0)
		require.ErrorIs(t, err, cudart.ErrInvalidDevice, "NewHandle on device %d of %d", count, count)
		assert.False(t, errors.Is(err, cublas.ErrInvalidStream), "not a refused stream: %v", err)
		t.Logf("NewHandle: %v", err)
	})

	t.Run("OtherDevicesStream", func(t *testing.T) {
		// cuBLAS takes a stream of another device than the handle's, and
		// on CUDA a GEMM queued there returns success and leaves the
		// device unusable (cudaErrorDevicesUnavailable to every call): the
		// binding refuses the stream at NewHandle and SetStream, and both
		// devices work after.
		count, err := s.rt.DeviceCount()
		require.NoError(t, err)
		if count < 2 {
			t.Skip("needs 2 devices; this host has 1")
		}
		other := (s.dev + 1) % count
		otherStream, err := st.StreamCreate(other)
		require.NoError(t, err)
		cleanup(t, "cudaStreamDestroy", func() error { return st.StreamDestroy(other, otherStream) })
		_, err = l.NewHandle(s.dev, otherStream)
		require.ErrorIs(t, err, cublas.ErrInvalidStream, "NewHandle on device %d's stream", other)
		assert.Contains(t, err.Error(), fmt.Sprintf("device %d's, the handle device %d's", other, s.dev))
		t.Logf("NewHandle: %v", err)
		h2 := s.handle(t, l, stream)
		err = h2.SetStream(otherStream)
		require.ErrorIs(t, err, cublas.ErrInvalidStream, "SetStream to device %d's stream", other)
		t.Logf("SetStream: %v", err)
		got, err := h2.Stream()
		require.NoError(t, err)
		require.Equal(t, stream, got, "the refused SetStream changed nothing")
		s.gemmOn(t, st, h2, s.dev, stream)
		h3, err := l.NewHandle(other, otherStream)
		require.NoError(t, err, "a handle of device %d on its own stream", other)
		t.Cleanup(func() { assert.NoError(t, h3.Close()) })
		s.gemmOn(t, st, h3, other, otherStream)
	})
	t.Run("GraphWithWorkspace", func(t *testing.T) {
		counts, grew := s.captureGemms(t, h, st, stream)
		t.Logf("3 GEMMs with a workspace: %v; 100 replays took %d B", counts, grew)
		require.Zero(t, counts.Memory(), "no memory node with a workspace")
		require.GreaterOrEqual(t, counts[cudart.GraphNodeKernel], 3, "a kernel a GEMM at least")
		require.Zero(t, grew, "100 replays of a graph of GEMMs with a workspace take no device memory")
	})
	t.Run("GraphWithoutWorkspace", func(t *testing.T) {
		_, stream := s.stream(t)
		bare := s.handle(t, l, stream)
		counts, grew := s.captureGemms(t, bare, st, stream)
		t.Logf("3 GEMMs with no workspace: %v; 100 replays took %d B", counts, grew)
		require.Equal(t, 3, counts[cudart.GraphNodeMemAlloc], "cuBLAS allocates its workspace in the graph, a node a GEMM")
		require.Equal(t, 3, counts[cudart.GraphNodeMemFree])
	})
}

// gemmOn runs 2·3 as a 1×1 GEMM on h, of device dev, on stream, and checks
// the product: the device works.
func (s *suite) gemmOn(t *testing.T, st cudart.Streams, h *cublas.Handle, dev int, stream cudart.Stream) {
	t.Helper()
	p, err := s.rt.Malloc(dev, 768)
	require.NoError(t, err, "cudaMalloc")
	cleanup(t, "cudaFree", func() error { return s.rt.Free(dev, p) })
	in := make([]byte, 260)
	binary.LittleEndian.PutUint32(in, math.Float32bits(2))
	binary.LittleEndian.PutUint32(in[256:], math.Float32bits(3))
	require.NoError(t, s.rt.Memcpy(dev, cudart.DeviceMem(p, 260), cudart.HostMem(in), cudart.HostToDevice), "cudaMemcpy")
	m := func(off uint64) cublas.Matrix { return cublas.Matrix{Ptr: p.Add(off), Type: cublas.Float32, LD: 1} }
	require.NoError(t, h.Gemm(cublas.Gemm{M: 1, N: 1, K: 1, Alpha: 1, A: m(0), B: m(256), C: m(512)}), "a GEMM on device %d", dev)
	require.NoError(t, st.StreamSynchronize(dev, stream), "device %d", dev)
	out := make([]byte, 4)
	require.NoError(t, s.rt.Memcpy(dev, cudart.HostMem(out), cudart.DeviceMem(p.Add(512), 4), cudart.DeviceToHost), "cudaMemcpy")
	require.Equal(t, float32(6), math.Float32frombits(binary.LittleEndian.Uint32(out)), "2·3 on device %d", dev)
}

// captureGemms captures three 256×256×256 SGEMMs on h's stream, replays the
// graph once, then 100 times, and returns its nodes by type and the device
// memory the 100 replays took.
func (s *suite) captureGemms(t *testing.T, h *cublas.Handle, st cudart.Streams, stream cudart.Stream) (cudart.GraphNodeCounts, int64) {
	g := need[cudart.Graphs](t, s.rt)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	const n = 256
	a := s.malloc(t, n*n*4)
	require.NoError(t, s.rt.Memset(s.dev, a, 0, n*n*4))
	gm := cublas.Gemm{M: n, N: n, K: n, Alpha: 1,
		A: cublas.Matrix{Ptr: a, Type: cublas.Float32, LD: n}, B: cublas.Matrix{Ptr: a, Type: cublas.Float32, LD: n},
		C: cublas.Matrix{Ptr: s.malloc(t, n*n*4), Type: cublas.Float32, LD: n}}
	require.NoError(t, h.Gemm(gm), "a GEMM before capture loads cuBLAS's kernels")
	require.NoError(t, st.StreamSynchronize(s.dev, stream))
	require.NoError(t, g.StreamBeginCapture(s.dev, stream, cudart.CaptureModeGlobal))
	for range 3 {
		require.NoError(t, h.Gemm(gm))
	}
	graph, err := g.StreamEndCapture(s.dev, stream)
	require.NoError(t, err)
	cleanup(t, "cudaGraphDestroy", func() error { return g.GraphDestroy(s.dev, graph) })
	counts, err := cudart.CountGraphNodes(g, s.dev, graph)
	require.NoError(t, err)
	exec, err := g.GraphInstantiate(s.dev, graph)
	require.NoError(t, err)
	cleanup(t, "cudaGraphExecDestroy", func() error { return g.GraphExecDestroy(s.dev, exec) })
	require.NoError(t, g.GraphLaunch(s.dev, exec, stream))
	require.NoError(t, st.StreamSynchronize(s.dev, stream))
	free0, _, err := s.rt.MemGetInfo(s.dev)
	require.NoError(t, err)
	for range 100 {
		require.NoError(t, g.GraphLaunch(s.dev, exec, stream))
	}
	require.NoError(t, st.StreamSynchronize(s.dev, stream))
	free1, _, err := s.rt.MemGetInfo(s.dev)
	require.NoError(t, err)
	return counts, int64(free0) - int64(free1)
}
