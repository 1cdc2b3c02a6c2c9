package conformance

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// openBLAS opens cuBLAS for the suite's runtime, skipping where there is none.
func (s *suite) openBLAS(t *testing.T) *cublas.Library {
	t.Helper()
	l, err := cublas.Open(s.rt)
	if errors.Is(err, cublas.ErrLibraryNotFound) {
		t.Skipf("no cuBLAS: %v", err)
	}
	require.NoError(t, err, "cublas.Open")
	return l
}

// handle makes a handle on stream freed at cleanup.
func (s *suite) handle(t *testing.T, l *cublas.Library, stream cudart.Stream) *cublas.Handle {
	t.Helper()
	h, err := l.NewHandle(s.dev, stream)
	require.NoError(t, err, "NewHandle")
	t.Cleanup(func() { assert.NoError(t, h.Close(), "Handle.Close") })
	return h
}

// devMem is device memory from cudaMalloc as a cuBLAS workspace.
type devMem struct {
	p   cudart.DevicePtr
	n   uint64
	dev int
}

func (m devMem) Ptr() (cudart.DevicePtr, error) { return m.p, nil }
func (m devMem) Size() uint64                   { return m.n }
func (m devMem) Device() int                    { return m.dev }

// gemmCase is a GEMM the suite runs and checks against float64.
type gemmCase struct {
	name           string
	ab, c          cublas.DataType
	ta, tb         cublas.Op
	m, n, k, batch int
	pad            int // extra rows in every leading dimension
	alpha, beta    float32
}

// operand is a matrix of a GEMM in host memory, as bytes of its type and as
// the values those bytes hold.
type operand struct {
	t      cublas.DataType
	rows   int
	ld     int
	cols   int
	batch  int
	values []float64
	bytes  []byte
}

func newOperand(r *rand.Rand, t cublas.DataType, rows, cols, ld, batch int, nan bool) *operand {
	o := &operand{t: t, rows: rows, cols: cols, ld: ld, batch: batch}
	n := ld * cols * batch
	o.values = make([]float64, n)
	o.bytes = make([]byte, n*t.Size())
	for i := range n {
		v := float32(r.Float64()*2 - 1)
		if nan {
			v = float32(math.NaN())
		}
		o.values[i] = o.put(i, v)
	}
	return o
}

// put stores v as element i in o's type and returns the value stored.
func (o *operand) put(i int, v float32) float64 {
	switch o.t {
	case cublas.Float16:
		h := cublas.Float16Bits(v)
		binary.LittleEndian.PutUint16(o.bytes[2*i:], h)
		return float64(cublas.Float16FromBits(h))
	case cublas.BFloat16:
		h := cublas.BFloat16Bits(v)
		binary.LittleEndian.PutUint16(o.bytes[2*i:], h)
		return float64(cublas.BFloat16FromBits(h))
	}
	binary.LittleEndian.PutUint32(o.bytes[4*i:], math.Float32bits(v))
	return float64(v)
}

func (o *operand) get(b []byte, i int) float64 {
	switch o.t {
	case cublas.Float16:
		return float64(cublas.Float16FromBits(binary.LittleEndian.Uint16(b[2*i:])))
	case cublas.BFloat16:
		return float64(cublas.BFloat16FromBits(binary.LittleEndian.Uint16(b[2*i:])))
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
}

// at is op(X)(i, j) of batch b.
func (o *operand) at(b, i, j int, trans bool) float64 {
	if trans {
		i, j = j, i
	}
	return o.values[b*o.ld*o.cols+i+j*o.ld]
}

// outputUnit is the unit roundoff of a result stored in t.
func outputUnit(t cublas.DataType) float64 {
	switch t {
	case cublas.Float16:
		return 0x1p-11
	case cublas.BFloat16:
		return 0x1p-8
	}
	return 0x1p-24
}

// gemmBound is the error allowed between a GEMM's result and the exact value
// ref: the cublas package's documented tolerance, k+2 roundings of an FP32
// accumulation over the absolute sum, and one rounding to C's type.
func gemmBound(out cublas.DataType, k int, abs, ref float64, tf32 bool) float64 {
	acc := float64(k+2) * 0x1p-23 * abs
	if tf32 {
		acc += 2 * 0x1p-11 * abs
	}
	return acc + outputUnit(out)*math.Abs(ref) + 1e-30
}

// runGemm uploads the operands of c, runs it on h, and checks C.
func (s *suite) runGemm(t *testing.T, h *cublas.Handle, st cudart.Streams, stream cudart.Stream, c gemmCase, tf32 bool) {
	r := rand.New(rand.NewPCG(uint64(c.m*7919+c.n*104729+c.k), uint64(c.ab)))
	rowsA, colsA := c.m, c.k
	if c.ta == cublas.Trans {
		rowsA, colsA = c.k, c.m
	}
	rowsB, colsB := c.k, c.n
	if c.tb == cublas.Trans {
		rowsB, colsB = c.n, c.k
	}
	a := newOperand(r, c.ab, rowsA, colsA, rowsA+c.pad, c.batch, false)
	b := newOperand(r, c.ab, rowsB, colsB, rowsB+c.pad, c.batch, false)
	cc := newOperand(r, c.c, c.m, c.n, c.m+c.pad, c.batch, c.beta == 0)
	pa, pb, pc := s.upload(t, a.bytes), s.upload(t, b.bytes), s.upload(t, cc.bytes)
	g := cublas.Gemm{
		TransA: c.ta, TransB: c.tb, M: c.m, N: c.n, K: c.k, Alpha: c.alpha, Beta: c.beta,
		A: cublas.Matrix{Ptr: pa, Type: c.ab, LD: a.ld, Stride: int64(a.ld * a.cols)},
		B: cublas.Matrix{Ptr: pb, Type: c.ab, LD: b.ld, Stride: int64(b.ld * b.cols)},
		C: cublas.Matrix{Ptr: pc, Type: c.c, LD: cc.ld, Stride: int64(cc.ld * cc.cols)},
	}
	if c.batch == 1 {
		require.NoError(t, h.Gemm(g), "Gemm(%v)", g)
	} else {
		require.NoError(t, h.GemmStridedBatched(g, c.batch), "GemmStridedBatched(%v, %d)", g, c.batch)
	}
	require.NoError(t, st.StreamSynchronize(s.dev, stream), calls.StreamSynchronize)
	got := s.read(t, pc, uint64(len(cc.bytes)))
	worst := 0.0
	for bt := range c.batch {
		for j := range c.n {
			for i := range c.m {
				ref, abs := 0.0, 0.0
				for l := range c.k {
					p := a.at(bt, i, l, c.ta == cublas.Trans) * b.at(bt, l, j, c.tb == cublas.Trans)
					ref += p
					abs += math.Abs(p)
				}
				old := cc.values[bt*cc.ld*cc.cols+i+j*cc.ld]
				ref, abs = float64(c.alpha)*ref, math.Abs(float64(c.alpha))*abs
				if c.beta != 0 {
					ref += float64(c.beta) * old
					abs += math.Abs(float64(c.beta) * old)
				}
				idx := bt*cc.ld*cc.cols + i + j*cc.ld
				v := cc.get(got, idx)
				bound := gemmBound(c.c, c.k, abs, ref, tf32)
				if !(math.Abs(v-ref) <= bound) {
					t.Fatalf("batch %d, C(%d, %d) = %g, want %g within %g", bt, i, j, v, ref, bound)
				}
				worst = max(worst, math.Abs(v-ref)/bound)
			}
		}
		// The padding rows of C are not written.
		for j := range c.n {
			for i := c.m; i < cc.ld; i++ {
				idx := bt*cc.ld*cc.cols + i + j*cc.ld
				if v, want := cc.get(got, idx), cc.values[idx]; !(v == want || (v != v && want != want)) {
					t.Fatalf("batch %d, padding C(%d, %d) = %g, was %g: written", bt, i, j, v, want)
				}
			}
		}
	}
	t.Logf("worst error: %.3f of the bound", worst)
}

// upload copies b to new device memory, freed at cleanup.
func (s *suite) upload(t *testing.T, b []byte) cudart.DevicePtr {
	t.Helper()
	p := s.malloc(t, uint64(max(len(b), 1)))
	require.NoError(t, s.rt.Memcpy(s.dev, cudart.DeviceMem(p, uint64(len(b))), cudart.HostMem(b), cudart.HostToDevice), calls.Memcpy)
	return p
}

// testBLAS: cuBLAS on the runtime's memory. GEMMs of every type pair the
// binding offers, plain and strided-batched, transposed or not, with padded
// leading dimensions, agree with float64 within the cublas package's
// documented bound; the same bad arguments get the same statuses; a
// workspace is checked; a graph captured with a workspace holds kernels only.
func (s *suite) testBLAS(t *testing.T) {
	st := need[cudart.Streams](t, s.rt, "Streams")
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
		for _, c := range []struct {
			name string
			g    cublas.Gemm
			want error
		}{
			{"LDATooSmall", with(func(g *cublas.Gemm) { g.A.LD = 15 }), cublas.ErrInvalidValue},
			{"LDATooSmallTransposed", with(func(g *cublas.Gemm) { g.TransA, g.K, g.A.LD = cublas.Trans, 20, 16 }), cublas.ErrInvalidValue},
			{"LDBTooSmall", with(func(g *cublas.Gemm) { g.B.LD = 8 }), cublas.ErrInvalidValue},
			{"LDCTooSmall", with(func(g *cublas.Gemm) { g.C.LD = 15 }), cublas.ErrInvalidValue},
			{"NegativeM", with(func(g *cublas.Gemm) { g.M = -1 }), cublas.ErrInvalidValue},
			{"NegativeK", with(func(g *cublas.Gemm) { g.K = -1 }), cublas.ErrInvalidValue},
			{"BadOp", with(func(g *cublas.Gemm) { g.TransA = 7 }), cublas.ErrInvalidValue},
			{"NullA", with(func(g *cublas.Gemm) { g.A.Ptr = 0 }), cublas.ErrInvalidValue},
			{"NullC", with(func(g *cublas.Gemm) { g.C.Ptr = 0 }), cublas.ErrInvalidValue},
			{"MixedAB", with(func(g *cublas.Gemm) { g.B.Type = cublas.Float16 }), cublas.ErrNotSupported},
			{"FP32InFP16Out", with(func(g *cublas.Gemm) { g.C.Type = cublas.Float16 }), cublas.ErrNotSupported},
			{"FP16InBF16Out", with(func(g *cublas.Gemm) { g.A.Type, g.B.Type, g.C.Type = cublas.Float16, cublas.Float16, cublas.BFloat16 }), cublas.ErrNotSupported},
		} {
			t.Run(c.name, func(t *testing.T) {
				err := h.Gemm(c.g)
				require.ErrorIs(t, err, c.want, "Gemm(%v)", c.g)
				var e *cublas.Error
				require.ErrorAs(t, err, &e)
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
		once(t, calls.StreamDestroy, func() error { return st.StreamDestroy(other, otherStream) })
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
	require.NoError(t, err, calls.Malloc)
	once(t, calls.Free, func() error { return s.rt.Free(dev, p) })
	in := make([]byte, 260)
	binary.LittleEndian.PutUint32(in, math.Float32bits(2))
	binary.LittleEndian.PutUint32(in[256:], math.Float32bits(3))
	require.NoError(t, s.rt.Memcpy(dev, cudart.DeviceMem(p, 260), cudart.HostMem(in), cudart.HostToDevice), calls.Memcpy)
	m := func(off uint64) cublas.Matrix { return cublas.Matrix{Ptr: p.Add(off), Type: cublas.Float32, LD: 1} }
	require.NoError(t, h.Gemm(cublas.Gemm{M: 1, N: 1, K: 1, Alpha: 1, A: m(0), B: m(256), C: m(512)}), "a GEMM on device %d", dev)
	require.NoError(t, st.StreamSynchronize(dev, stream), "device %d", dev)
	out := make([]byte, 4)
	require.NoError(t, s.rt.Memcpy(dev, cudart.HostMem(out), cudart.DeviceMem(p.Add(512), 4), cudart.DeviceToHost), calls.Memcpy)
	require.Equal(t, float32(6), math.Float32frombits(binary.LittleEndian.Uint32(out)), "2·3 on device %d", dev)
}

// captureGemms captures three 256×256×256 SGEMMs on h's stream, replays the
// graph once, then 100 times, and returns its nodes by type and the device
// memory the 100 replays took.
func (s *suite) captureGemms(t *testing.T, h *cublas.Handle, st cudart.Streams, stream cudart.Stream) (cudart.GraphNodeCounts, int64) {
	g := need[cudart.Graphs](t, s.rt, "Graphs")
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
	once(t, calls.GraphDestroy, func() error { return g.GraphDestroy(s.dev, graph) })
	counts, err := cudart.CountGraphNodes(g, s.dev, graph)
	require.NoError(t, err)
	exec, err := g.GraphInstantiate(s.dev, graph)
	require.NoError(t, err)
	once(t, calls.GraphExecDestroy, func() error { return g.GraphExecDestroy(s.dev, exec) })
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
		require.NoError(t, err, calls.MemGetInfo)
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
