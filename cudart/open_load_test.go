package cudart

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/dl"
)

// openMissing opens with opts and the runtime's environment variable set to
// env, with default names that name no library, so that Open fails on a
// host where CUDA is installed too.
func openMissing(t *testing.T, env string, opts ...Option) *LoadError {
	t.Helper()
	t.Setenv(envRuntimeLibrary, env)
	real := defaultRuntimeNames
	defaultRuntimeNames = []string{"/nonexistent/default/libcudart.so", "/nonexistent/default/libcudart.so.13"}
	t.Cleanup(func() { defaultRuntimeNames = real })
	l, err := Open(opts...)
	if err == nil {
		require.NoError(t, l.Close())
	}
	require.ErrorIs(t, err, ErrLibraryNotFound)
	var le *LoadError
	require.ErrorAs(t, err, &le)
	return le
}

func TestOpenListsEveryPathTried(t *testing.T) {
	le := openMissing(t, "/nonexistent/libcudart.so")
	require.Len(t, le.Tried, 1+len(defaultRuntimeNames))
	assert.True(t, strings.HasPrefix(le.Tried[0], "/nonexistent/libcudart.so: "), "the environment variable comes first: %q", le.Tried[0])
	assert.Contains(t, le.Tried[0], "No such file", "each path carries the loader's message")
	for i, name := range defaultRuntimeNames {
		assert.True(t, strings.HasPrefix(le.Tried[i+1], name+": "), "then %s: %q", name, le.Tried[i+1])
	}
	msg := le.Error()
	for _, name := range append([]string{"/nonexistent/libcudart.so"}, defaultRuntimeNames...) {
		assert.Contains(t, msg, name)
	}
	assert.Equal(t, "CUDA runtime", le.Library)
}

func TestOpenOptionBeforeEnvironment(t *testing.T) {
	le := openMissing(t, "/nonexistent/env/libcudart.so", WithLibraryPath("/nonexistent/option/libcudart.so"))
	require.GreaterOrEqual(t, len(le.Tried), 2)
	assert.True(t, strings.HasPrefix(le.Tried[0], "/nonexistent/option/libcudart.so: "), le.Tried[0])
	assert.True(t, strings.HasPrefix(le.Tried[1], "/nonexistent/env/libcudart.so: "), le.Tried[1])
}

func TestOpenNonCUDALibrary(t *testing.T) {
	for _, lib := range []string{"libm.so.6", "libc.so.6"} {
		t.Run(lib, func(t *testing.T) {
			l, err := Open(WithLibraryPath(lib))
			require.Error(t, err)
			assert.Nil(t, l)
			assert.ErrorIs(t, err, ErrSymbolNotFound)
			assert.NotErrorIs(t, err, ErrLibraryNotFound)
			var le *LoadError
			require.ErrorAs(t, err, &le)
			require.Len(t, le.Tried, 1, "the first library that loads is the one used")
			assert.Contains(t, le.Tried[0], lib+": lacks ")
			assert.Contains(t, le.Tried[0], ": cudaGetErrorName, ", "names the first missing function")
			assert.Contains(t, le.Tried[0], "cudaMemPrefetchAsync")
		})
	}
}

func TestOpenDriverMissingIsNotFatal(t *testing.T) {
	b := &dlBackend{}
	path, err := b.open(calls.DriverLibrary, []string{"/nonexistent/libcuda.so.1"}, dl.Resident)
	assert.Empty(t, path)
	assert.ErrorIs(t, err, ErrNoDriverLibrary)
	assert.Contains(t, err.Error(), "/nonexistent/libcuda.so.1: ")

	path, err = b.open(calls.DriverLibrary, []string{"/nonexistent/libcuda.so.1", "libm.so.6"}, dl.Resident)
	assert.Empty(t, path)
	assert.ErrorIs(t, err, ErrNoDriverLibrary)
	assert.ErrorIs(t, err, ErrSymbolNotFound)
	assert.Contains(t, err.Error(), "libm.so.6: lacks 17 of the 17 functions needed: cuGetErrorName, ")
	assert.Equal(t, dlBackend{}, *b, "a failed load changes nothing")
}
