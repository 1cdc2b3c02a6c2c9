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
