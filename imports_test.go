package cudapool_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/internal/golist"
)

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
