package cudarttest_test

import (
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/record"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/internal/runtimeenv"
)

// cudaAvailable says whether CUDA loads here with a device.
func cudaAvailable() bool {
	lib, _, err := runtimeenv.CUDA()
	if err != nil {
		return false
	}
	_ = lib.Close()
	return true
}

func TestOpenChoosesByTheEnvironment(t *testing.T) {
	cuda := cudaAvailable()
	for _, tt := range []struct {
		env      string
		wantFake bool
		wantLog  string
	}{
		{"fake", true, "runtime: fake (CUDAPOOL_RUNTIME=fake)"},
		{"", !cuda, "runtime: "},
		{"auto", !cuda, "runtime: "},
	} {
		t.Run("env="+tt.env, func(t *testing.T) {
			t.Setenv(cudarttest.EnvRuntime, tt.env)
			rec := &record.TB{}
			rt := cudarttest.Open(rec)
			require.NotNil(t, rt)
			_, isFake := rt.(*cudarttest.Fake)
			assert.Equal(t, tt.wantFake, isFake)
			require.Len(t, rec.Logs, 1)
			assert.Contains(t, rec.Logs[0], tt.wantLog)
			if isFake && tt.env != "fake" {
				assert.Contains(t, rec.Logs[0], "CUDA unavailable")
			}
			rec.RunCleanups()
			assert.Empty(t, rec.Errors)
			assert.Empty(t, rec.Fatals)
		})
	}
}

func TestOpenRefusesWhatItCannotGive(t *testing.T) {
	if !cudaAvailable() {
		t.Run("cuda without CUDA", func(t *testing.T) {
			t.Setenv(cudarttest.EnvRuntime, "cuda")
			rec := &record.TB{}
			assert.Nil(t, cudarttest.Open(rec))
			require.Len(t, rec.Fatals, 1)
			assert.Contains(t, rec.Fatals[0], "CUDAPOOL_RUNTIME=cuda")
			assert.Contains(t, rec.Fatals[0], "libcudart", "the loader's message names what it tried")
		})
	}
	t.Setenv(cudarttest.EnvRuntime, "gpu")
	rec := &record.TB{}
	assert.Nil(t, cudarttest.Open(rec))
	require.Len(t, rec.Fatals, 1)
	assert.Contains(t, rec.Fatals[0], `unknown runtime "gpu"`)
}

func TestOpenFailsATestThatLeaks(t *testing.T) {
	rec := &record.TB{}
	t.Setenv(cudarttest.EnvRuntime, "auto")
	rt := cudarttest.Open(rec)
	// On CUDA, allocate through a library of the test's own: Open's cleanup
	// closes the one it opened.
	var alloc cudart.Runtime = rt
	if _, ok := rt.(*cudarttest.Fake); !ok {
		lib, err := cudart.Open()
		require.NoError(t, err)
		defer lib.Close()
		alloc = lib
	}
	p, err := alloc.Malloc(0, 64<<20)
	require.NoError(t, err)
	rec.RunCleanups()
	require.NotEmpty(t, rec.Errors, "64 MiB left allocated is reported at cleanup")
	t.Logf("reported: %v", rec.Errors)
	assert.NoError(t, alloc.Free(0, p))
}
