package golist_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/internal/golist"
)

func TestDeps(t *testing.T) {
	deps, err := golist.Deps("{{.ImportPath}}", ".")
	if err != nil {
		require.ErrorIs(t, err, golist.ErrUnavailable)
		t.Skip(err)
	}
	assert.Contains(t, deps, golist.Module+"/internal/golist")
	assert.Contains(t, deps, "os/exec")
}

// TestDepsOutsideTheModule: from a directory outside the module, as a test
// binary run elsewhere, Deps reports ErrUnavailable instead of go list's
// failure, so that the test skips.
func TestDepsOutsideTheModule(t *testing.T) {
	t.Chdir(t.TempDir())
	_, err := golist.Deps("{{.ImportPath}}", golist.Module+"/pool")
	require.ErrorIs(t, err, golist.ErrUnavailable)
	assert.Contains(t, err.Error(), "golist: ")
}

// TestWatchStatsTheModulesFiles: Watch finds this package's own files and
// go.mod, and skips hidden directories such as .git.
func TestWatchStatsTheModulesFiles(t *testing.T) {
	if _, err := golist.Deps("{{.ImportPath}}", "."); err != nil {
		t.Skip(err)
	}
	n, err := golist.Watch()
	require.NoError(t, err)
	assert.Greater(t, n, 100, "the module has hundreds of Go files")
}
