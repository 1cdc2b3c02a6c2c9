package cudapool_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/internal/golist"
)

// TestExamplesImportNoInternal: every example builds when copied alone into
// a user's module, where an import of this module's internal/ (or
// cudart/internal/) fails ("use of internal package ... not allowed").
func TestExamplesImportNoInternal(t *testing.T) {
	// One field an import: "importer>imported".
	edges := golist.DepsT(t, `{{range .Imports}}{{$.ImportPath}}>{{.}} {{end}}`, "./examples/...")
	examples := map[string]bool{}
	for _, e := range edges {
		from, to, _ := strings.Cut(e, ">")
		if !strings.HasPrefix(from, golist.Module+"/examples/") {
			continue
		}
		examples[from] = true
		assert.False(t, strings.HasPrefix(to, golist.Module+"/") && strings.Contains(to, "/internal/"), "%s imports %s", from, to)
	}
	require.Contains(t, examples, golist.Module+"/examples/quickstart", "go list lists the examples")
}
