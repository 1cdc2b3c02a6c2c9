package cudapool_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sourceFiles are the slash paths of the module's non-test Go files, the
// examples' among them where examples is set; hidden folders and testdata
// are left out. The test skips where go.mod is not here: a test binary run
// alone, as on a GPU host.
func sourceFiles(t *testing.T, examples bool) []string {
	t.Helper()
	if _, err := os.Stat("go.mod"); errors.Is(err, fs.ErrNotExist) {
		t.Skip("go.mod is not here: run from the repository")
	}
	var paths []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || !examples && path == "examples") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			paths = append(paths, filepath.ToSlash(path))
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	return paths
}

// maxLines is the most lines a non-test Go file has: past it, a file holds
// more than one concept, and splits at its seams.
const maxLines = 450

// longFiles are the files over maxLines while the helpers who own them
// split or move them. The list only shrinks.
var longFiles = []string{}

// TestNoLongFiles: no non-test Go file of the module, examples included,
// is over maxLines but longFiles, and each of those still is (a file split
// since leaves the list).
func TestNoLongFiles(t *testing.T) {
	var long []string
	for _, path := range sourceFiles(t, true) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		if n := bytes.Count(b, []byte("\n")); n > maxLines {
			long = append(long, path)
			assert.Contains(t, longFiles, path, "%s has %d lines, over %d: split it at its seams", path, n, maxLines)
		}
	}
	for _, f := range longFiles {
		assert.Contains(t, long, f, "%s is no longer over %d lines: take it off longFiles", f, maxLines)
	}
}
