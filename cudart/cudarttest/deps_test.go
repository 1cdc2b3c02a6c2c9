package cudarttest_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFakeLinksNoTestingPackages: a program that links the fake (its
// package and everything that package imports) links neither testing nor
// testify, so that the fake can ship in programs and not only in tests.
func TestFakeLinksNoTestingPackages(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list dependencies with: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps")
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/cudapool/cudapool/cudart/cudarttest", "go list lists the package itself")
	for _, d := range deps {
		assert.NotEqual(t, "testing", d, "cudarttest links testing")
		assert.False(t, strings.HasPrefix(d, "github.com/stretchr/testify"), "cudarttest links %s", d)
	}
}
