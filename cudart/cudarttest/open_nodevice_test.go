package cudarttest

import (
	"errors"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// noDeviceLib is a loaded CUDA runtime on a host with no usable GPU:
// cudaGetDeviceCount fails with code, as CUDA's does with no device
// (cudaErrorNoDevice) or no driver (cudaErrorInsufficientDriver).
type noDeviceLib struct {
	*Fake
	closed *bool
}

func (l noDeviceLib) Path() string       { return "/usr/lib/libcudart.so.13" }
func (l noDeviceLib) DriverPath() string { return "" }
func (l noDeviceLib) Close() error       { *l.closed = true; return nil }

// withNoDevice makes loadCUDA give noDeviceLib for the test.
func withNoDevice(t *testing.T, code cudart.Code) *bool {
	f := NewFake()
	require.NoError(t, f.FailCall("cudaGetDeviceCount", code))
	closed := new(bool)
	saved := loadCUDA
	loadCUDA = func() (cudart.Library, error) { return noDeviceLib{f, closed}, nil }
	t.Cleanup(func() { loadCUDA = saved })
	return closed
}

// TestOpenModeWithTheLibraryAndNoDevice: where libcudart loads but has no
// usable device, "auto" takes the fake, and "cuda", asked for by the
// program or by CUDAPOOL_RUNTIME, fails saying why; the library is closed
// either way.
func TestOpenModeWithTheLibraryAndNoDevice(t *testing.T) {
	for _, code := range []cudart.Code{100, 35} {
		t.Run(cudart.NewError("", code).Name, func(t *testing.T) {
			t.Setenv(EnvRuntime, "")
			closed := withNoDevice(t, code)
			rt, err := OpenMode("auto")
			require.NoError(t, err)
			assert.False(t, rt.CUDA)
			assert.Contains(t, rt.Description, "no usable device")
			assert.True(t, *closed, "auto closes the library it does not use")

			for _, tt := range []struct{ mode, env, from string }{
				{"cuda", "", `runtime "cuda"`},
				{"", "cuda", "CUDAPOOL_RUNTIME=cuda"},
			} {
				*closed = false
				t.Setenv(EnvRuntime, tt.env)
				_, err = OpenMode(tt.mode)
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

// TestOpenModeEmptyReadsTheVariable: programs that pass their -runtime
// flag's default, "", get what CUDAPOOL_RUNTIME names, as tests do.
func TestOpenModeEmptyReadsTheVariable(t *testing.T) {
	withNoDevice(t, 100)
	t.Setenv(EnvRuntime, "fake")
	rt, err := OpenMode("")
	require.NoError(t, err)
	assert.Equal(t, "fake (cudarttest, no GPU used)", rt.Description)
	t.Setenv(EnvRuntime, "gpu")
	_, err = OpenMode("")
	assert.True(t, errors.Is(err, ErrInvalidOption), "an unknown runtime wraps ErrInvalidOption: %v", err)
	assert.Contains(t, err.Error(), `unknown runtime "gpu" (CUDAPOOL_RUNTIME=gpu)`)
}
