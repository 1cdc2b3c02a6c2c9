package cublas_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/record"
	"github.com/cudapool/cudapool/internal/pooltest"
	"github.com/cudapool/cudapool/pool"
)

// A failure injected into each cuBLAS call the binding makes comes back as
// a *cublas.Error with that status, changes nothing the handle reports, and
// leaks nothing: NewFakeT fails the test at cleanup otherwise.
func TestInjectedCUBLASFailures(t *testing.T) {
	const (
		allocFailed     = 3  // CUBLAS_STATUS_ALLOC_FAILED
		internalError   = 14 // CUBLAS_STATUS_INTERNAL_ERROR
		executionFailed = 13 // CUBLAS_STATUS_EXECUTION_FAILED
	)
	type env struct {
		rt   *cudarttest.Fake
		blas *cublas.Library
		s    cudart.Stream
		ws   *pool.Buffer
		mats cudart.DevicePtr
	}
	setupEnv := func(t *testing.T) env {
		rt := cudarttest.NewFakeT(t)
		p := pooltest.New(t, rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
		ws := pooltest.Device(t, p, cublas.MinWorkspace, pool.Name("workspace"))
		mats := pooltest.Device(t, p, 1024, pool.Name("matrices"))
		require.NoError(t, p.Commit())
		blas, err := cublas.Open(rt)
		require.NoError(t, err)
		return env{rt, blas, pooltest.Stream(t, rt, 0), ws, pooltest.Ptr(t, mats)}
	}
	handle := func(t *testing.T, e env) *cublas.Handle {
		h, err := e.blas.NewHandle(0, e.s)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, h.Close()) })
		return h
	}
	// run makes the calls of a case, calling fail right before the one
	// that is to fail.
	for _, tc := range []struct {
		name   string
		call   string // as FailCallNth takes it
		status int
		run    func(t *testing.T, e env, fail func()) error
	}{
		{"Create", "cublasCreate", allocFailed, func(t *testing.T, e env, fail func()) error {
			fail()
			h, err := e.blas.NewHandle(0, e.s)
			require.Nil(t, h)
			return err
		}},
		{"CreateV2", "cublasCreate_v2", allocFailed, func(t *testing.T, e env, fail func()) error {
			fail()
			_, err := e.blas.NewHandle(0, e.s)
			return err
		}},
		{"SetStreamInNewHandle", "cublasSetStream", internalError, func(t *testing.T, e env, fail func()) error {
			fail()
			h, err := e.blas.NewHandle(0, e.s)
			require.Nil(t, h)
			require.Zero(t, e.rt.Live().LibraryHandles, "NewHandle destroyed the handle it could not finish")
			return err
		}},
		{"SetStream", "cublasSetStream", internalError, func(t *testing.T, e env, fail func()) error {
			h := handle(t, e)
			fail()
			err := h.SetStream(0)
			st, serr := h.Stream()
			require.NoError(t, serr)
			assert.Equal(t, e.s, st, "the failed SetStream kept the stream")
			return err
		}},
		{"SetWorkspace", "cublasSetWorkspace_v2", internalError, func(t *testing.T, e env, fail func()) error {
			h := handle(t, e)
			fail()
			err := h.SetWorkspace(e.ws)
			ws, werr := h.Workspace()
			require.NoError(t, werr)
			assert.Nil(t, ws, "the failed SetWorkspace set nothing")
			return err
		}},
		{"GemmEx", "cublasGemmEx", executionFailed, func(t *testing.T, e env, fail func()) error {
			h := handle(t, e)
			fail()
			err := h.Gemm(cublas.Gemm{M: 4, N: 4, K: 4, Alpha: 1, A: f32(e.mats, 4), B: f32(e.mats, 4), C: f32(e.mats+256, 4)})
			require.NoError(t, e.rt.StreamSynchronize(0, e.s), "the failed GEMM queued nothing that faults")
			require.NoError(t, h.Gemm(cublas.Gemm{M: 4, N: 4, K: 4, Alpha: 1, A: f32(e.mats, 4), B: f32(e.mats, 4), C: f32(e.mats+256, 4)}), "the fault fired once")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setupEnv(t)
			err := tc.run(t, e, func() { require.NoError(t, e.rt.FailCallNth(tc.call, 1, cudart.Code(tc.status))) })
			var ce *cublas.Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, cublas.Status(tc.status), ce.Status)
			assert.Contains(t, ce.Call, strings.TrimSuffix(tc.call, "_v2"), "the binding names the call as C code does")
			t.Log(err)
		})
	}
}

// FailCall refuses a name neither the runtime nor its cuBLAS makes, listing
// the cuBLAS names with the runtime's; the status calls, which the fake
// answers from its own table, are not among them. The fake knows cuBLAS's
// names once cublas.Open has attached its cuBLAS, and says so before.
func TestFailCallNamesCUBLASCalls(t *testing.T) {
	rt := cudarttest.NewFakeT(t)
	err := rt.FailCall("cublasGetProperty", 7)
	require.Error(t, err, "no cuBLAS before cublas.Open")
	assert.Contains(t, err.Error(), "once its binding is opened on the fake")
	blas, err := cublas.Open(rt)
	require.NoError(t, err)
	err = rt.FailCall("cublasSgemm", 13)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cublasGemmStridedBatchedEx")
	assert.Contains(t, err.Error(), "cudaMalloc")
	require.Error(t, rt.FailCall("cublasGetStatusName", 13))
	require.NoError(t, rt.FailCall("cublasGetProperty", 7))
	_, err = blas.Version()
	require.ErrorIs(t, err, cublas.ErrInvalidValue, "every call fails until ClearFaults")
	_, err = blas.Version()
	require.ErrorIs(t, err, cublas.ErrInvalidValue)
	rt.ClearFaults()
	_, err = blas.Version()
	require.NoError(t, err)
}

// A leaked handle is reported with the line that made it, as a leaked
// stream is.
func TestALeakedHandleNamesItsLine(t *testing.T) {
	rec := &record.TB{}
	rt := cudarttest.NewFakeT(rec)
	blas, err := cublas.Open(rt)
	require.NoError(t, err)
	_, file, line, _ := runtime.Caller(0)
	h, err := blas.NewHandle(0, 0)
	require.NoError(t, err)
	rec.RunCleanups()
	require.Empty(t, rec.Fatals)
	require.Len(t, rec.Errors, 1)
	assert.Contains(t, rec.Errors[0], "cuBLAS handle")
	assert.Contains(t, rec.Errors[0], fmt.Sprintf("made by cublas.(*Library).NewHandle called at %s:%d in cublas_test.TestALeakedHandleNamesItsLine", filepath.Base(file), line+1))
	t.Log(rec.Errors[0])
	require.NoError(t, h.Close())
	require.NoError(t, rt.CheckLeaks())
}
