package cudarttest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// goList is `go list -deps` of args (packages, after any further flags),
// with format; it skips the test where no go command is installed.
func goList(t *testing.T, format string, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list dependencies with: %v", err)
	}
	out, err := exec.Command(gobin, append([]string{"list", "-deps", "-f", format}, args...)...).Output()
	require.NoError(t, err, "go list -deps %s", strings.Join(args, " "))
	return strings.Fields(string(out))
}

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

// userPackages are what a user's code and tests import: the pool, the fake
// and the conformance suite.
var userPackages = []string{
	"github.com/cudapool/cudapool/pool",
	"github.com/cudapool/cudapool/cudart/cudarttest",
	"github.com/cudapool/cudapool/cudart/cudarttest/conformance",
}

// TestUsersGainOnlyTheDesignsModules: a module whose code and tests import
// pool, cudarttest and conformance gains, outside the standard library and
// this module, only purego, zap (with multierr) and go-humanize: no testify,
// no YAML parser, which its own go list -deps -test would otherwise show.
func TestUsersGainOnlyTheDesignsModules(t *testing.T) {
	pkgs := goList(t, "{{if not .Standard}}{{.ImportPath}}{{end}}", userPackages...)
	require.Subset(t, pkgs, userPackages, "go list lists the packages themselves")
	for _, p := range pkgs {
		assert.False(t, strings.Contains(p, "testify") || strings.Contains(p, "yaml"), "a user's module gains %s", p)
	}
	modules := goList(t, "{{if not .Standard}}{{with .Module}}{{.Path}}{{end}}{{end}}", userPackages...)
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
// (cudarttest and conformance) keep testify and YAML out of their own tests
// too, as out of their code; go list -deps -test lists what those tests
// link.
func TestUsersTestsGainNoTestify(t *testing.T) {
	suites := []string{
		"github.com/cudapool/cudapool/cudart/cudarttest",
		"github.com/cudapool/cudapool/cudart/cudarttest/conformance",
	}
	pkgs := goList(t, "{{if not .Standard}}{{.ImportPath}}{{end}}", append([]string{"-test"}, suites...)...)
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
