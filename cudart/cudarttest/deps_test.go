package cudarttest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFakeLinksNoTestingPackages: a program that links the fake (its
// package and everything that package imports) links neither testing nor
// testify, so that the fake can ship in programs and not only in tests.
func TestFakeLinksNoTestingPackages(t *testing.T) {
	deps := strings.Fields(string(listDeps(t)))
	require.Contains(t, deps, "github.com/cudapool/cudapool/cudart/cudarttest", "go list lists the package itself")
	for _, d := range deps {
		assert.NotEqual(t, "testing", d, "cudarttest links testing")
		assert.False(t, strings.HasPrefix(d, "github.com/stretchr/testify"), "cudarttest links %s", d)
	}
}

// depsFile is where make gpu writes go list -deps of the package, beside
// the test binary, for a host with no go command (a GPU host).
const depsFile = "testdata/cudarttest.deps"

// listDeps is go list -deps of the package, or, with no go command, what
// make gpu listed when it built the test binary.
func listDeps(t *testing.T) []byte {
	t.Helper()
	if gobin, err := exec.LookPath("go"); err == nil {
		out, err := exec.Command(gobin, "list", "-deps", ".").Output()
		require.NoError(t, err, "go list -deps")
		return out
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	out, err := os.ReadFile(filepath.Join(filepath.Dir(exe), depsFile))
	require.NoError(t, err, "no go command, and no %s beside the test binary (make gpu writes it)", depsFile)
	return out
}
