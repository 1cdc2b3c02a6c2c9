package cublas_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// operands is a strict fake with a pool whose buffers "a", "b" and "c" hold
// 16×16 FP32 matrices each, placed in that order and alone in the arena,
// and a handle on a stream of its own.
func operands(t *testing.T) (*cudarttest.Fake, *cublas.Handle, cudart.Stream, [3]cudart.DevicePtr) {
	t.Helper()
	rt := cudarttest.NewFakeT(t)
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
	require.NoError(t, err)
	var ptrs [3]cudart.DevicePtr
	var bufs [3]*pool.Buffer
	for i, name := range []string{"a", "b", "c"} {
		bufs[i], err = p.WantDevice(16*16*4, pool.Name(name))
		require.NoError(t, err)
	}
	require.NoError(t, p.Commit())
	for i, b := range bufs {
		ptrs[i], err = b.Ptr()
		require.NoError(t, err)
	}
	blas, err := cublas.Open(rt)
	require.NoError(t, err)
	s, err := rt.StreamCreate(0)
	require.NoError(t, err)
	h, err := blas.NewHandle(0, s)
	require.NoError(t, err)
	// A fault leaves the device unusable: a reset frees the pool's memory,
	// the stream and the handle with it.
	t.Cleanup(func() {
		require.NoError(t, rt.DeviceReset(0))
		require.ErrorIs(t, p.Close(), pool.ErrDeviceReset)
		require.ErrorIs(t, h.Close(), cublas.ErrDeviceReset)
	})
	return rt, h, s, ptrs
}

// A GEMM whose shape fits cuBLAS's int but not memory is queued, as cuBLAS
// queues it, and faults when it runs, naming the operand that runs past its
// buffer: the fake neither panics nor allocates the operands first.
func TestAGemmLargerThanMemoryFaults(t *testing.T) {
	const huge = math.MaxInt32
	for _, tc := range []struct {
		name    string
		g       func(p [3]cudart.DevicePtr) cublas.Gemm
		batch   int
		call    string
		operand string
	}{
		{"MNK", func(p [3]cudart.DevicePtr) cublas.Gemm {
			return cublas.Gemm{M: huge, N: huge, K: huge, Alpha: 1, A: f32(p[0], huge), B: f32(p[1], huge), C: f32(p[2], huge)}
		}, 1, "cublasGemmEx", `A (`},
		{"K", func(p [3]cudart.DevicePtr) cublas.Gemm {
			return cublas.Gemm{M: 16, N: 16, K: huge, Alpha: 1, TransA: cublas.Trans, A: f32(p[0], huge), B: f32(p[1], huge), C: f32(p[2], 16)}
		}, 1, "cublasGemmEx", `A (`},
		{"LDC", func(p [3]cudart.DevicePtr) cublas.Gemm {
			return cublas.Gemm{M: 16, N: 16, K: 16, Alpha: 1, A: f32(p[0], 16), B: f32(p[1], 16), C: f32(p[2], huge)}
		}, 1, "cublasGemmEx", `C (`},
		{"StrideWrapsPast2To64", func(p [3]cudart.DevicePtr) cublas.Gemm {
			g := cublas.Gemm{M: 16, N: 16, K: 16, Alpha: 1, A: f32(p[0], 16), B: f32(p[1], 16), C: f32(p[2], 16)}
			g.B.Stride = math.MaxInt64 / 2
			return g
		}, 3, "cublasGemmStridedBatchedEx", `B (`},
		{"NegativeStride", func(p [3]cudart.DevicePtr) cublas.Gemm {
			g := cublas.Gemm{M: 16, N: 16, K: 16, Alpha: 1, A: f32(p[0], 16), B: f32(p[1], 16), C: f32(p[2], 16)}
			g.C.Stride = math.MinInt64
			return g
		}, huge, "cublasGemmStridedBatchedEx", `C (`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, h, s, p := operands(t)
			g := tc.g(p)
			if tc.batch == 1 {
				require.NoError(t, h.Gemm(g), "cuBLAS queues it")
			} else {
				require.NoError(t, h.GemmStridedBatched(g, tc.batch), "cuBLAS queues it")
			}
			err := rt.StreamSynchronize(0, s)
			require.ErrorIs(t, err, cudart.ErrIllegalAddress)
			t.Log(err)
			assert.Contains(t, err.Error(), tc.call)
			assert.Contains(t, err.Error(), tc.operand)
			require.ErrorIs(t, rt.DeviceSynchronize(0), cudart.ErrIllegalAddress, "the fault is sticky")
		})
	}
}

// A GEMM that reads A past its buffer, with a wrong TransA, faults naming A
// and its buffer, not the buffer nearest the first byte no buffer holds.
func TestAGemmFaultNamesTheOperandAndItsBuffer(t *testing.T) {
	rt, h, s, p := operands(t)
	// op(A) is 16×64: A as stored, 16×64 with ld 16, is 4 KiB from "a",
	// over "b" and "c" and past them.
	g := cublas.Gemm{M: 16, N: 1, K: 64, Alpha: 1, A: f32(p[0], 16), B: f32(p[1], 64), C: f32(p[2], 16)}
	require.NoError(t, h.Gemm(g))
	err := rt.StreamSynchronize(0, s)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	t.Log(err)
	msg := err.Error()
	assert.Contains(t, msg, "cublasGemmEx")
	assert.Contains(t, msg, "A (N, 16×64 stored, ld 16, CUDA_R_32F)")
	assert.Contains(t, msg, `past the end of "a" (1.0 KiB), the buffer A starts in`)
	assert.NotContains(t, msg, `"c"`)
}

// Nothing is computed after a fault, nor before it within the same GEMM: a
// strided batch whose second C runs past its memory leaves the first C, in
// mapped host memory the host can read after the fault, as it was.
func TestAFaultingGemmWritesNothing(t *testing.T) {
	rt, h, s, p := operands(t)
	host, err := rt.HostAlloc(0, 16*16*4, cudart.HostAllocMapped)
	require.NoError(t, err)
	for i := range host {
		host[i] = 0x7f
	}
	pc, err := rt.HostGetDevicePointer(0, host)
	require.NoError(t, err)
	g := cublas.Gemm{M: 16, N: 16, K: 16, Alpha: 1, A: f32(p[0], 16), B: f32(p[1], 16), C: f32(pc, 16)}
	g.C.Stride = 16 * 16
	require.NoError(t, h.GemmStridedBatched(g, 2))
	err = rt.StreamSynchronize(0, s)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	assert.Contains(t, err.Error(), "C (N, 16×16 stored, ld 16, CUDA_R_32F) of batch 1")
	for i, b := range host {
		require.Equal(t, byte(0x7f), b, "byte %d of batch 0's C was written", i)
	}
}

// A GEMM whose B runs past its pool buffer fails when it runs, naming the
// buffer, as a copy past it does.
func TestAGemmPastItsBufferNamesTheBuffer(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
	require.NoError(t, err)
	a, err := p.WantDevice(16*16*4, pool.Name("a"))
	require.NoError(t, err)
	b, err := p.WantDevice(16*15*4, pool.Name("b: one column short"))
	require.NoError(t, err)
	c, err := p.WantDevice(16*16*4, pool.Name("c"))
	require.NoError(t, err)
	ws, err := p.WantDevice(cublas.MinWorkspace, pool.Name("workspace"))
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	h := newHandle(t, rt)
	require.NoError(t, h.SetWorkspace(ws))
	pa, _ := a.Ptr()
	pb, _ := b.Ptr()
	pc, _ := c.Ptr()
	require.NoError(t, h.Gemm(cublas.Gemm{M: 16, N: 16, K: 16, Alpha: 1, A: f32(pa, 16), B: f32(pb, 16), C: f32(pc, 16)}), "the GEMM is queued")
	err = rt.DeviceSynchronize(0)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	assert.Contains(t, err.Error(), `"b: one column short" (960 B)`)
	assert.Contains(t, err.Error(), "cublasGemmEx")
	t.Log(err)
	// The fault is sticky: a reset destroys the pool's memory and the handle.
	require.NoError(t, rt.DeviceReset(0))
	require.ErrorIs(t, p.Close(), pool.ErrDeviceReset)
	require.Zero(t, rt.Live().LibraryHandles, "the reset destroyed the handle")
	require.ErrorIs(t, h.Gemm(cublas.Gemm{}), cublas.ErrDeviceReset)
	require.ErrorIs(t, h.Close(), cublas.ErrDeviceReset)
	require.NoError(t, h.Close(), "the second Close")
}

// A GEMM in a slot whose A is one column short reads into the slot's next
// buffer: the strict fake sees each of a held slot's buffers as a region of
// its own, so the GEMM faults naming the operand and the buffer "A", where
// the whole slot had been one region and the read went unnoticed.
func TestASlotsGemmPastItsBufferNamesTheBuffer(t *testing.T) {
	const n = 16
	rt := cudarttest.NewFakeT(t)
	lib, err := cublas.Open(rt)
	require.NoError(t, err)
	pr := pool.NewProfile("gemm")
	var refs [3]pool.Ref
	for i, b := range []struct {
		name string
		cols uint64
	}{{"A", n - 1}, {"B", n}, {"C", n}} {
		refs[i], err = pr.Device(4*n*b.cols, pool.Name(b.name))
		require.NoError(t, err)
	}
	s, err := pool.NewSlots(rt, 2, pool.SlotLayout{Profiles: []*pool.Profile{pr}, Attach: []pool.Attachment{lib.ForSlots(0)}})
	require.NoError(t, err)
	t.Cleanup(func() {
		// The fault is sticky: a reset ends it and takes the slots' memory,
		// streams and handles with it.
		require.NoError(t, rt.DeviceReset(0))
		require.ErrorIs(t, s.Close(), pool.ErrDeviceReset)
	})
	sl, err := s.Acquire(context.Background(), "gemm")
	require.NoError(t, err)
	var p [3]cudart.DevicePtr
	for i, r := range refs {
		p[i], err = sl.Ptr(r)
		require.NoError(t, err)
	}
	h, err := pool.Attached[cublas.Lent](sl)
	require.NoError(t, err)
	require.NoError(t, h.Gemm(cublas.Gemm{M: n, N: n, K: n, Alpha: 1, A: f32(p[0], n), B: f32(p[1], n), C: f32(p[2], n)}), "cuBLAS queues it")
	st, err := sl.Stream()
	require.NoError(t, err)
	err = rt.StreamSynchronize(0, st)
	require.ErrorIs(t, err, cudart.ErrIllegalAddress)
	t.Log(err)
	assert.Contains(t, err.Error(), "A (N, 16×16 stored, ld 16, CUDA_R_32F)")
	assert.Contains(t, err.Error(), fmt.Sprintf(`past the end of "A (slot %d)" (960 B), the buffer A starts in`, sl.Index()))
}
