package dl

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cudapool/cudapool/internal/check/assert"
	"github.com/cudapool/cudapool/internal/check/require"
)

// byValueSource is embedded so that the test binary builds it wherever it
// runs.
//
//go:embed testdata/byvalue.c
var byValueSource []byte

// buildByValue compiles testdata/byvalue.c into a shared library; the test
// skips without a C compiler.
func buildByValue(t *testing.T) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	path, err := exec.LookPath(cc)
	if err != nil {
		t.Skipf("no C compiler to build testdata/byvalue.c: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "byvalue.c")
	require.NoError(t, os.WriteFile(src, byValueSource, 0o644))
	so := filepath.Join(dir, "byvalue.so")
	out, err := exec.Command(path, "-shared", "-fPIC", "-O2", "-o", so, src).CombinedOutput()
	require.NoError(t, err, "building byvalue.c: %s", out)
	return so
}

// TestBindPassesALargeStructByValue: a 128-byte struct among words reaches
// C whole, and the words after it too (the C ABI passes it on the stack on
// amd64 and by the address of a copy on arm64).
func TestBindPassesALargeStructByValue(t *testing.T) {
	needLinux(t)
	l, err := Open([]string{buildByValue(t)}, []Symbol{{Name: "take_id"}}, 0)
	require.NoError(t, err)
	defer l.Close()
	type id struct{ internal [128]byte }
	type config struct{ a, b int64 }
	var takeID func(out *uint64, nranks int32, id id, rank int32, c *config) int32
	Bind(&takeID, l.Fns[0])

	var v id
	var want uint64
	for i := range v.internal {
		v.internal[i] = byte(i*37 + 11)
		want = want*31 + uint64(v.internal[i])
	}
	var got uint64
	assert.Equal(t, int32(4003), takeID(&got, 4, v, 3, &config{a: 2, b: 5}))
	assert.Equal(t, want+19, got)
}
