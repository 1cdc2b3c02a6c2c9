package cudarttest_test

import (
	"fmt"
	"testing"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/internal/runtimeenv"
)

// recordTB is a cudarttest.TB that records what Open does with it and runs
// its cleanups when asked.
type recordTB struct {
	logs, errs, fatals []string
	cleanups           []func()
}

func (r *recordTB) Helper()                   {}
func (r *recordTB) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recordTB) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }
func (r *recordTB) Fatalf(f string, a ...any) { r.fatals = append(r.fatals, fmt.Sprintf(f, a...)) }
func (r *recordTB) Logf(f string, a ...any)   { r.logs = append(r.logs, fmt.Sprintf(f, a...)) }

func (r *recordTB) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}

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
			rec := &recordTB{}
			rt := cudarttest.Open(rec)
			require.NotNil(t, rt)
			_, isFake := rt.(*cudarttest.Fake)
			assert.Equal(t, tt.wantFake, isFake)
			require.Len(t, rec.logs, 1)
			assert.Contains(t, rec.logs[0], tt.wantLog)
			if isFake && tt.env != "fake" {
				assert.Contains(t, rec.logs[0], "CUDA unavailable")
			}
			rec.cleanup()
			assert.Empty(t, rec.errs)
			assert.Empty(t, rec.fatals)
		})
	}
}

func TestOpenRefusesWhatItCannotGive(t *testing.T) {
	if !cudaAvailable() {
		t.Run("cuda without CUDA", func(t *testing.T) {
			t.Setenv(cudarttest.EnvRuntime, "cuda")
			rec := &recordTB{}
			assert.Nil(t, cudarttest.Open(rec))
			require.Len(t, rec.fatals, 1)
			assert.Contains(t, rec.fatals[0], "CUDAPOOL_RUNTIME=cuda")
			assert.Contains(t, rec.fatals[0], "libcudart", "the loader's message names what it tried")
		})
	}
	t.Setenv(cudarttest.EnvRuntime, "gpu")
	rec := &recordTB{}
	assert.Nil(t, cudarttest.Open(rec))
	require.Len(t, rec.fatals, 1)
	assert.Contains(t, rec.fatals[0], `unknown runtime "gpu"`)
}

func TestOpenFailsATestThatLeaks(t *testing.T) {
	rec := &recordTB{}
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
	rec.cleanup()
	require.NotEmpty(t, rec.errs, "64 MiB left allocated is reported at cleanup")
	t.Logf("reported: %v", rec.errs)
	assert.NoError(t, alloc.Free(0, p))
}
