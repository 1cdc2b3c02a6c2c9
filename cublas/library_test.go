package cublas_test

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/pool"
)

// openFake is the runtime a program chooses with CUDAPOOL_RUNTIME=fake: the
// fake inside choose's wrapper, as the README's program gets it.
func openFake(t *testing.T) cudart.Full {
	t.Helper()
	t.Setenv(choose.Env, "fake")
	rt, err := choose.Open("")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, rt.Close()) })
	return rt
}

// The runtime a program chooses works with cublas as the bare fake does:
// Open finds the fake inside it and a GEMM computes on the fake.
func TestOpenTakesTheChosenFake(t *testing.T) {
	rt := openFake(t)
	blas, err := cublas.Open(rt)
	require.NoError(t, err)
	assert.Equal(t, "fake", blas.Path())
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(0))
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	ws, err := p.WantDevice(cublas.MinWorkspace, pool.Name("workspace"))
	require.NoError(t, err)
	mats, err := p.WantDevice(3*4*4, pool.Name("a, b, c"))
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	h, err := blas.NewHandle(0, 0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, h.Close()) }()
	require.NoError(t, h.SetWorkspace(ws))
	// Column-major A = [1 2; 3 4] and B = the identity: C = 2·A.
	in := make([]byte, 32)
	for i, v := range []float32{1, 3, 2, 4, 1, 0, 0, 1} {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(v))
	}
	base, err := mats.Ptr()
	require.NoError(t, err)
	require.NoError(t, rt.Memcpy(0, cudart.DeviceMem(base, 32), cudart.HostMem(in), cudart.HostToDevice))
	m := func(i int) cublas.Matrix {
		return cublas.Matrix{Ptr: base.Add(uint64(16 * i)), Type: cublas.Float32, LD: 2}
	}
	require.NoError(t, h.Gemm(cublas.Gemm{M: 2, N: 2, K: 2, Alpha: 2, A: m(0), B: m(1), C: m(2)}))
	out := make([]byte, 16)
	require.NoError(t, rt.Memcpy(0, cudart.HostMem(out), cudart.DeviceMem(base.Add(32), 16), cudart.DeviceToHost))
	var got []float32
	for i := range 4 {
		got = append(got, math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])))
	}
	assert.Equal(t, []float32{2, 6, 4, 8}, got)
}

// sharedLibraries are libraries one of which loads on each Unix the binding
// supports: the C library by its soname, or the system library macOS links
// every program with.
var sharedLibraries = []string{"libc.so.6", "libc.so", "/usr/lib/libSystem.B.dylib"}

// loadableNonCUBLAS is a shared library that loads here and is not cuBLAS,
// found by asking Open to load it for a runtime that is not the fake: Open
// then says it loaded and lacks cuBLAS's functions.
func loadableNonCUBLAS(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, path := range sharedLibraries {
		_, err := cublas.Open(notFake{}, cublas.WithLibraryPath(path))
		var le *cublas.LoadError
		if errors.Is(err, cublas.ErrSymbolNotFound) && errors.As(err, &le) && len(le.Tried) == 1 {
			return path
		}
		tried = append(tried, path+": "+errString(err))
	}
	t.Skipf("no shared library loads here to stand for a libcublas: %q", tried)
	return ""
}

func errString(err error) string {
	if err == nil {
		return "loaded as cuBLAS"
	}
	return err.Error()
}

// On a host that has a library to load as cuBLAS, the fake a program chooses
// never loads it: its addresses mean nothing to a real cuBLAS.
func TestTheChosenFakeLoadsNoLibrary(t *testing.T) {
	path := loadableNonCUBLAS(t)
	rt := openFake(t)
	t.Setenv(cublas.EnvLibrary, path)
	for name, opts := range map[string][]cublas.Option{
		"$" + cublas.EnvLibrary: nil,
		"WithLibraryPath":       {cublas.WithLibraryPath(path)},
	} {
		t.Run(name, func(t *testing.T) {
			blas, err := cublas.Open(rt, opts...)
			require.NoError(t, err, "%s loads here", path)
			assert.Equal(t, "fake", blas.Path())
		})
	}
}
