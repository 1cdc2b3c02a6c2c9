package cudapool_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/internal/golist"
)

// TestExamplesImportNoInternal: every example builds when copied alone into
// a user's module, where an import of this module's internal/ fails ("use of
// internal package ... not allowed").
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
		assert.False(t, strings.HasPrefix(to, golist.Module+"/internal/"), "%s imports %s", from, to)
	}
	require.Contains(t, examples, golist.Module+"/examples/quickstart", "go list lists the examples")
}

// TestImportRegistersNothing: a package a user imports (any outside
// examples/ and internal/) links neither expvar nor net/http/pprof, whose
// inits serve the process's command line, memory statistics and profiles on
// http.DefaultServeMux.
func TestImportRegistersNothing(t *testing.T) {
	users := 0
	// One field a package: "package>dependency>dependency...".
	for _, line := range golist.DepsT(t, "{{.ImportPath}}{{range .Deps}}>{{.}}{{end}}", golist.Module+"/...") {
		p, deps, _ := strings.Cut(line, ">")
		if !strings.HasPrefix(p, golist.Module) || strings.Contains(p, "/examples/") || strings.Contains(p, "/internal/") {
			continue
		}
		users++
		for _, d := range strings.Split(deps, ">") {
			assert.NotContains(t, []string{"expvar", "net/http/pprof"}, d, "importing %s links %s", p, d)
		}
	}
	require.Greater(t, users, 5, "go list lists the module's packages")
}
