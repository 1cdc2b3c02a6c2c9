package cudarttest_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
	"github.com/cudapool/cudapool/internal/golist"
)

// TestFakeLinksNoTestingPackages: a program that links the fake (its
// package and everything that package imports) links neither testing nor
// testify, so that the fake can ship in programs and not only in tests.
func TestFakeLinksNoTestingPackages(t *testing.T) {
	deps := listDeps(t)
	require.Contains(t, deps, "github.com/cudapool/cudapool/cudart/cudarttest", "go list lists the package itself")
	for _, d := range deps {
		assert.NotEqual(t, "testing", d, "cudarttest links testing")
		assert.False(t, strings.HasPrefix(d, "github.com/stretchr/testify"), "cudarttest links %s", d)
	}
}

// userPackages are what a user's code and tests import: the pool, the
// choice of runtime, the fake and the conformance suite.
var userPackages = []string{
	"github.com/cudapool/cudapool/pool",
	"github.com/cudapool/cudapool/choose",
	"github.com/cudapool/cudapool/cudart/cudarttest",
	"github.com/cudapool/cudapool/cudart/cudarttest/conformance",
}

// TestUsersGainOnlyTheDesignsModules: a module whose code and tests import
// pool, choose, cudarttest and conformance gains, outside the standard library and
// this module, only purego, zap (with multierr) and go-humanize: no testify,
// no YAML parser, which its own go list -deps -test would otherwise show.
func TestUsersGainOnlyTheDesignsModules(t *testing.T) {
	pkgs := golist.DepsT(t, "{{if not .Standard}}{{.ImportPath}}{{end}}", userPackages...)
	require.Subset(t, pkgs, userPackages, "go list lists the packages themselves")
	for _, p := range pkgs {
		assert.False(t, strings.Contains(p, "testify") || strings.Contains(p, "yaml"), "a user's module gains %s", p)
	}
	modules := golist.DepsT(t, "{{if not .Standard}}{{with .Module}}{{.Path}}{{end}}{{end}}", userPackages...)
	slices.Sort(modules)
	assert.Equal(t, []string{
		"github.com/cudapool/cudapool",
		"github.com/dustin/go-humanize",
		"github.com/ebitengine/purego",
		"go.uber.org/multierr",
		"go.uber.org/zap",
	}, slices.Compact(modules))
}

// TestUsersTestsGainNoTestify: the packages users import into their tests
// (cudarttest and conformance) and programs into their mains (choose) keep
// testify and YAML out of their own tests too, as out of their code; go
// list -deps -test lists what those tests link.
func TestUsersTestsGainNoTestify(t *testing.T) {
	suites := []string{
		"github.com/cudapool/cudapool/choose",
		"github.com/cudapool/cudapool/cudart/cudarttest",
		"github.com/cudapool/cudapool/cudart/cudarttest/conformance",
	}
	pkgs := golist.DepsT(t, "{{if not .Standard}}{{.ImportPath}}{{end}}", append([]string{"-test"}, suites...)...)
	for _, s := range suites {
		require.Contains(t, pkgs, s+".test", "go list -test lists the test binary of %s", s)
	}
	for _, p := range pkgs {
		assert.False(t, strings.Contains(p, "testify") || strings.Contains(p, "yaml"), "a test of a user's package imports %s", p)
	}
}

// depsFile is where make gpu writes go list -deps of the package, beside
// the test binary, for a host with no go command (a GPU host).
const depsFile = "testdata/cudarttest.deps"

// listDeps is go list -deps of the package, or, where go list cannot
// list the module (a GPU host, or a binary run from another directory),
// what make gpu recorded beside the test binary; with neither it skips.
func listDeps(t *testing.T) []string {
	t.Helper()
	deps, err := golist.Deps("{{.ImportPath}}", golist.Module+"/cudart/cudarttest")
	if !errors.Is(err, golist.ErrUnavailable) {
		require.NoError(t, err)
		return deps
	}
	exe, exeErr := os.Executable()
	require.NoError(t, exeErr)
	out, readErr := os.ReadFile(filepath.Join(filepath.Dir(exe), depsFile))
	if errors.Is(readErr, fs.ErrNotExist) {
		t.Skipf("%v; and no %s beside the test binary (make gpu writes it)", err, depsFile)
	}
	require.NoError(t, readErr)
	return strings.Fields(string(out))
}
