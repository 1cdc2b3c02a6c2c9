package cublas_test

import (
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/pool"
)

// setup opens the runtime CUDAPOOL_RUNTIME names (the fake by default), a
// pool with a workspace and room for operands, cuBLAS and a handle on a
// stream of its own.
func setup(t *testing.T, opts ...cudarttest.Option) (cudart.Full, *pool.Pool, *cublas.Handle, *pool.Buffer, *pool.Buffer) {
	t.Helper()
	rt := cudarttest.Open(t, opts...)
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	ws, err := p.WantDevice(32<<20, pool.Name("workspace"))
	require.NoError(t, err)
	mats, err := p.WantDevice(1000, pool.Name("matrices"))
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	blas, err := cublas.Open(rt)
	require.NoError(t, err)
	s, err := rt.StreamCreate(0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, rt.StreamDestroy(0, s)) })
	h, err := blas.NewHandle(0, s)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, h.Close()) })
	require.NoError(t, h.SetWorkspace(ws))
	return rt, p, h, ws, mats
}

// newHandle opens cuBLAS on rt and makes a handle on device 0's legacy
// stream; the caller closes it.
func newHandle(t *testing.T, rt cudart.Runtime) *cublas.Handle {
	t.Helper()
	blas, err := cublas.Open(rt)
	require.NoError(t, err)
	h, err := blas.NewHandle(0, 0)
	require.NoError(t, err)
	return h
}

func f32(p cudart.DevicePtr, ld int) cublas.Matrix {
	return cublas.Matrix{Ptr: p, Type: cublas.Float32, LD: ld}
}

// The handle keeps its workspace and refuses to queue work once the pool has
// released it; a workspace on the wrong device, too small or in the host
// arena is refused when set.
func TestWorkspaceChecks(t *testing.T) {
	rt, p, h, ws, mats := setup(t)
	pm, err := mats.Ptr()
	require.NoError(t, err)
	g := cublas.Gemm{M: 4, N: 4, K: 4, Alpha: 1, A: f32(pm, 4), B: f32(pm, 4), C: f32(pm+256, 4)}
	require.NoError(t, h.Gemm(g))
	got, err := h.Workspace()
	require.NoError(t, err)
	require.Same(t, ws, got)
	require.NoError(t, rt.DeviceSynchronize(0))

	require.NoError(t, p.ReleaseAll())
	require.ErrorIs(t, h.Gemm(g), cublas.ErrInvalidWorkspace, "the workspace was released")
	require.ErrorIs(t, h.SetWorkspace(ws), cublas.ErrInvalidWorkspace, "a released buffer")

	small, err := p.WantDevice(cublas.MinWorkspace-1, pool.Name("small"))
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	err = h.SetWorkspace(small)
	require.ErrorIs(t, err, cublas.ErrInvalidWorkspace)
	assert.Contains(t, err.Error(), "4194303 B given")
	require.ErrorIs(t, h.SetWorkspace(nil), cublas.ErrInvalidWorkspace)
}

func TestWorkspaceOnAnotherDevice(t *testing.T) {
	rt := cudarttest.NewFakeT(t, cudarttest.WithDevices(2))
	p, err := pool.New(rt, pool.WithDevice(1), pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	ws, err := p.WantDevice(32 << 20)
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	h := newHandle(t, rt)
	t.Cleanup(func() { assert.NoError(t, h.Close()) })
	err = h.SetWorkspace(ws)
	require.ErrorIs(t, err, cublas.ErrInvalidWorkspace)
	assert.Contains(t, err.Error(), "device 1, the handle on device 0")
}

// A handle the device has no room for fails as cuBLAS does, and leaves
// nothing behind.
func TestNewHandleOnAFullDevice(t *testing.T) {
	rt := cudarttest.NewFakeT(t, cudarttest.WithDeviceMemory(64<<20))
	blas, err := cublas.Open(rt)
	require.NoError(t, err)
	_, err = blas.NewHandle(0, 0)
	require.ErrorIs(t, err, cublas.ErrAllocFailed)
	require.True(t, rt.Live().Empty())
}

func TestClosedAndNilHandles(t *testing.T) {
	_, _, h, _, _ := setup(t)
	require.NoError(t, h.Close())
	require.NoError(t, h.Close(), "a second Close")
	require.ErrorIs(t, h.Gemm(cublas.Gemm{}), cublas.ErrClosed)
	require.ErrorIs(t, h.SetStream(0), cublas.ErrClosed)
	require.ErrorIs(t, h.SetMathMode(cublas.MathTF32), cublas.ErrClosed)
	var nilHandle *cublas.Handle
	require.NoError(t, nilHandle.Close())
	require.ErrorIs(t, nilHandle.Gemm(cublas.Gemm{}), cublas.ErrClosed)
	// The accessors refuse a nil or closed handle as the other methods do.
	for _, x := range []*cublas.Handle{h, nilHandle} {
		_, err := x.Stream()
		require.ErrorIs(t, err, cublas.ErrClosed)
		_, err = x.Workspace()
		require.ErrorIs(t, err, cublas.ErrClosed)
		_, err = x.MathMode()
		require.ErrorIs(t, err, cublas.ErrClosed)
		_, err = x.Device()
		require.ErrorIs(t, err, cublas.ErrClosed)
	}
	var zero cublas.Lent
	require.ErrorIs(t, zero.Gemm(cublas.Gemm{}), cublas.ErrClosed)
	_, err := zero.Stream()
	require.ErrorIs(t, err, cublas.ErrClosed)
	_, err = cublas.Open(nil)
	require.ErrorIs(t, err, cublas.ErrInvalidOption)
	_, err = cublas.Open(cudarttest.NewFakeT(t), nil)
	require.ErrorIs(t, err, cublas.ErrInvalidOption)
}

// A fake that leaks a handle says so.
func TestALeakedHandleIsALeak(t *testing.T) {
	rt := cudarttest.NewFake()
	h := newHandle(t, rt)
	err := rt.CheckLeaks()
	require.ErrorIs(t, err, cudarttest.ErrLeaked)
	assert.Contains(t, err.Error(), "cuBLAS handle")
	require.NoError(t, h.Close())
	require.NoError(t, rt.CheckLeaks())
}

// notFake is a runtime that is not the fake, for Open's loading path.
type notFake struct {
	cudart.Runtime
	cudart.Device
}

func TestOpenSaysWhatItTried(t *testing.T) {
	t.Setenv(cublas.EnvLibrary, "/nonexistent/libcublas-env.so")
	_, err := cublas.Open(notFake{}, cublas.WithLibraryPath("/nonexistent/libcublas-option.so"))
	if err == nil {
		t.Skip("a libcublas loaded from the default names: this test is for hosts without one")
	}
	require.ErrorIs(t, err, cublas.ErrLibraryNotFound)
	var le *cublas.LoadError
	require.ErrorAs(t, err, &le)
	require.GreaterOrEqual(t, len(le.Tried), 3)
	assert.Contains(t, le.Tried[0], "/nonexistent/libcublas-option.so")
	assert.Contains(t, le.Tried[1], "/nonexistent/libcublas-env.so")
	assert.Contains(t, err.Error(), "libcublas.so.13")
	assert.NotContains(t, err.Error(), "cublas: cannot load libcublas (cublas:")
	_, err = cublas.Open(struct{ cudart.Runtime }{})
	require.ErrorIs(t, err, cublas.ErrInvalidOption, "a runtime that cannot select devices")
}

// On CUDA, the library's version and the text of its statuses are what the
// fake reports.
func TestVersionAndTexts(t *testing.T) {
	rt := cudarttest.Open(t)
	blas, err := cublas.Open(rt)
	require.NoError(t, err)
	v, err := blas.Version()
	require.NoError(t, err)
	t.Logf("cuBLAS %s from %s", v, blas.Path())
	require.GreaterOrEqual(t, v.Major, 12)
	fake, err := cublas.Open(cudarttest.NewFake())
	require.NoError(t, err)
	fv, err := fake.Version()
	require.NoError(t, err)
	if os.Getenv("CUDAPOOL_RUNTIME") == "cuda" {
		assert.Equal(t, fv, v, "the fake follows the cuBLAS it was measured against")
	}
}

// The conversions round to nearest even and read back exactly.
func TestHalfConversionsRoundTrip(t *testing.T) {
	for _, v := range []float32{0, 1, -0.5, 3.140625, 65504} {
		assert.Equal(t, v, cublas.Float16FromBits(cublas.Float16Bits(v)))
	}
	for _, v := range []float32{0, 1, -0.5, 3.140625, 65536, 1e30} {
		assert.Equal(t, cublas.BFloat16Bits(v), cublas.BFloat16Bits(cublas.BFloat16FromBits(cublas.BFloat16Bits(v))))
	}
	assert.Equal(t, float32(65536), cublas.BFloat16FromBits(cublas.BFloat16Bits(65504)), "bfloat16 keeps 8 bits")
	assert.Equal(t, float32(math.Inf(1)), cublas.Float16FromBits(cublas.Float16Bits(1e6)))
	b := make([]byte, 2)
	binary.LittleEndian.PutUint16(b, cublas.BFloat16Bits(1))
	assert.Equal(t, []byte{0x80, 0x3f}, b)
}
