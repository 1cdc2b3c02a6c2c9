package choose_test

import (
	"errors"
	"testing"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/internal/runtimeenv"
)

func TestOpenForPrograms(t *testing.T) {
	rt, err := choose.Open("fake", cudarttest.WithDevices(2))
	require.NoError(t, err)
	n, err := rt.DeviceCount()
	require.NoError(t, err)
	assert.Equal(t, 2, n, "options reach the fake")
	assert.False(t, rt.CUDA)
	f, ok := cudart.As[*cudarttest.Fake](rt)
	require.True(t, ok, "the fake is found inside what Open returns")
	assert.NoError(t, rt.Close())
	_, err = rt.Malloc(0, 256)
	assert.NoError(t, err, "closing the fake frees nothing and keeps it usable")
	assert.Equal(t, 1, f.Live().DeviceAllocs, "the allocation is the fake's")
	_, err = choose.Open("tpu")
	assert.ErrorIs(t, err, cudarttest.ErrInvalidOption)
	assert.ErrorContains(t, err, "want auto (CUDA")
}

// Options are checked whatever the mode, so that a program's mistake shows
// on a GPU host too.
func TestOpenChecksOptionsWhateverTheMode(t *testing.T) {
	for _, mode := range []string{"fake", "auto", "cuda", "tpu"} {
		_, err := choose.Open(mode, cudarttest.WithDevices(-1))
		assert.ErrorIs(t, err, cudarttest.ErrInvalidOption, mode)
		assert.ErrorContains(t, err, "WithDevices(-1)", mode)
	}
}

// noDeviceLib is a loaded CUDA runtime on a host with no usable GPU:
// cudaGetDeviceCount fails, as CUDA's does with no device
// (cudaErrorNoDevice) or no driver (cudaErrorInsufficientDriver).
type noDeviceLib struct {
	*cudarttest.Fake
	closed *bool
}

func (l noDeviceLib) Path() string       { return "/usr/lib/libcudart.so.13" }
func (l noDeviceLib) DriverPath() string { return "" }
func (l noDeviceLib) Close() error       { *l.closed = true; return nil }

// withNoDevice makes CUDA load as noDeviceLib, whose DeviceCount fails with
// code, for the test.
func withNoDevice(t *testing.T, code cudart.Code) *bool {
	f := cudarttest.NewFake()
	require.NoError(t, f.FailCall("cudaGetDeviceCount", code))
	closed := new(bool)
	saved := runtimeenv.Load
	runtimeenv.Load = func() (cudart.Library, error) { return noDeviceLib{f, closed}, nil }
	t.Cleanup(func() { runtimeenv.Load = saved })
	return closed
}

// TestOpenWithTheLibraryAndNoDevice: where libcudart loads but has no
// usable device, "auto" takes the fake, and "cuda", asked for by the
// program or by CUDAPOOL_RUNTIME, fails saying why; the library is closed
// either way.
func TestOpenWithTheLibraryAndNoDevice(t *testing.T) {
	for _, code := range []cudart.Code{100, 35} {
		t.Run(cudart.NewError("", code).Name, func(t *testing.T) {
			t.Setenv(choose.Env, "")
			closed := withNoDevice(t, code)
			rt, err := choose.Open("auto")
			require.NoError(t, err)
			assert.False(t, rt.CUDA)
			assert.Contains(t, rt.Description, "no usable device")
			assert.True(t, *closed, "auto closes the library it does not use")

			for _, tt := range []struct{ mode, env, from string }{
				{"cuda", "", `runtime "cuda"`},
				{"", "cuda", "CUDAPOOL_RUNTIME=cuda"},
			} {
				*closed = false
				t.Setenv(choose.Env, tt.env)
				_, err = choose.Open(tt.mode)
				require.Error(t, err)
				assert.True(t, errors.Is(err, cudart.NewError("", code)), "the error wraps CUDA's: %v", err)
				for _, want := range []string{tt.from, "CUDA is unusable", "/usr/lib/libcudart.so.13 loaded with no usable device", cudart.NewError("", code).Name} {
					assert.Contains(t, err.Error(), want)
				}
				assert.True(t, *closed)
			}
		})
	}
}

// TestOpenEmptyReadsTheVariable: programs that pass their -runtime flag's
// default, "", get what CUDAPOOL_RUNTIME names, as tests do.
func TestOpenEmptyReadsTheVariable(t *testing.T) {
	withNoDevice(t, 100)
	t.Setenv(choose.Env, "fake")
	rt, err := choose.Open("")
	require.NoError(t, err)
	assert.Equal(t, "fake (cudarttest, no GPU used)", rt.Description)
	t.Setenv(choose.Env, "gpu")
	_, err = choose.Open("")
	assert.True(t, errors.Is(err, cudarttest.ErrInvalidOption), "an unknown runtime wraps ErrInvalidOption: %v", err)
	assert.Contains(t, err.Error(), `unknown runtime "gpu" (CUDAPOOL_RUNTIME=gpu)`)
}

// On a GPU host, "cuda" is CUDA, and what it wraps is the library loaded.
func TestOpenCUDA(t *testing.T) {
	rt, err := choose.Open("cuda")
	if err != nil {
		t.Skipf("no usable CUDA here: %v", err)
	}
	defer func() { assert.NoError(t, rt.Close()) }()
	assert.True(t, rt.CUDA)
	assert.Contains(t, rt.Description, "CUDA (")
	_, ok := cudart.As[cudart.Library](rt.Unwrap())
	assert.True(t, ok, "Unwrap is the cudart.Library")
	_, ok = cudart.As[*cudarttest.Fake](rt)
	assert.False(t, ok, "no fake inside CUDA")
}
