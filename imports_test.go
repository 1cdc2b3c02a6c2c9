package cudapool_test

import (
	"go/parser"
	"go/token"
	"path"
	"strconv"
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

// loaderFiles are the files that may import unsafe or purego: those of the
// one loader every binding shares, internal/dl (abi.go: the call ABI and the
// marshalling of Go memory, unsafe and purego; dlfcn.go: the system loader,
// purego). The list only shrinks.
var loaderFiles = []string{
	"internal/dl/abi.go",
	"internal/dl/dlfcn.go",
}

// TestOnlyTheLoaderImportsUnsafe: no file of the module, examples included,
// imports unsafe or purego but loaderFiles, and each of those still does (a
// file that no longer needs them leaves the list).
func TestOnlyTheLoaderImportsUnsafe(t *testing.T) {
	var found []string
	fset := token.NewFileSet()
	for _, path := range sourceFiles(t, true) {
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == "unsafe" || p == "github.com/ebitengine/purego" || strings.HasPrefix(p, "github.com/ebitengine/purego/") {
				found = append(found, path)
				break
			}
		}
	}
	for _, f := range found {
		assert.Contains(t, loaderFiles, f, "%s imports unsafe or purego: only the loader's files may", f)
	}
	for _, f := range loaderFiles {
		assert.Contains(t, found, f, "%s imports neither unsafe nor purego: take it off loaderFiles", f)
	}
}

// TestCoreImportsNoBinding: pool, plan, vmem and pinned import no library
// binding but cudart: nothing they link reaches purego, which loads CUDA's
// libraries, except through cudart. A slot's library handle attaches
// through pool.Attachment, which a binding implements without importing
// pool.
func TestCoreImportsNoBinding(t *testing.T) {
	imports := map[string][]string{}
	// One field a package: "package>import>import...".
	for _, line := range golist.DepsT(t, "{{.ImportPath}}{{range .Imports}}>{{.}}{{end}}", golist.Module+"/...") {
		p, rest, _ := strings.Cut(line, ">")
		if rest != "" {
			imports[p] = strings.Split(rest, ">")
		}
	}
	// bindings reports the path from p to purego that does not go through
	// cudart, or nil.
	var bindings func(p string, seen map[string]bool) []string
	bindings = func(p string, seen map[string]bool) []string {
		if p == golist.Module+"/cudart" || seen[p] {
			return nil
		}
		seen[p] = true
		if p == "github.com/ebitengine/purego" {
			return []string{p}
		}
		for _, q := range imports[p] {
			if via := bindings(q, seen); via != nil {
				return append([]string{p}, via...)
			}
		}
		return nil
	}
	require.NotNil(t, bindings(golist.Module+"/cublas", map[string]bool{}), "cublas reaches purego outside cudart: the walk finds a binding")
	for _, p := range []string{"pool", "plan", "vmem", "pinned"} {
		via := bindings(golist.Module+"/"+p, map[string]bool{})
		assert.Nil(t, via, "%s imports a binding: %s", p, strings.Join(via, " -> "))
	}
}

// TestNoImportRunsBackUp: no package under a package of the module with
// packages of its own below it (cudart, cublas, nccl, ...), its tests
// included, depends on a package of the module built on that root from
// outside it: the arrows run from the libraries to cudart and never back
// up, each library's fake and conformance group living beside its binding.
// Only internal/, what several packages share, is imported from both
// sides.
func TestNoImportRunsBackUp(t *testing.T) {
	// One field a package: "package|import,import...|test import,...".
	imports, tests := map[string][]string{}, map[string][]string{}
	format := `{{.ImportPath}}|{{join .Imports ","}}|{{join .TestImports ","}},{{join .XTestImports ","}}`
	for _, line := range golist.DepsT(t, format, golist.Module+"/...") {
		f := strings.Split(line, "|")
		imports[f[0]], tests[f[0]] = strings.Split(f[1], ","), strings.Split(f[2], ",")
	}
	under := func(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	internal := golist.Module + "/internal"
	// reaches reports whether p depends on root.
	var reaches func(p, root string, seen map[string]bool) bool
	reaches = func(p, root string, seen map[string]bool) bool {
		if p == root {
			return true
		}
		seen[p] = true
		for _, q := range imports[p] {
			if !seen[q] && reaches(q, root, seen) {
				return true
			}
		}
		return false
	}
	// above is the path from p to a package built on root outside root
	// and internal, or nil.
	var above func(p, root string, seen map[string]bool) []string
	above = func(p, root string, seen map[string]bool) []string {
		seen[p] = true
		if strings.HasPrefix(p, golist.Module) && !under(p, root) && !under(p, internal) && reaches(p, root, map[string]bool{}) {
			return []string{p}
		}
		for _, q := range imports[p] {
			if !seen[q] {
				if via := above(q, root, seen); via != nil {
					return append([]string{p}, via...)
				}
			}
		}
		return nil
	}
	var roots []string
	for r := range imports {
		if r == golist.Module || under(r, internal) || under(r, golist.Module+"/examples") {
			continue
		}
		for p := range imports {
			if p != r && under(p, r) {
				roots = append(roots, r)
				break
			}
		}
	}
	for _, want := range []string{"cudart", "cublas", "nccl"} {
		require.Contains(t, roots, golist.Module+"/"+want, "go list lists the packages below each binding")
	}
	for _, root := range roots {
		for p := range imports {
			if !under(p, root) {
				continue
			}
			for _, q := range append(imports[p], tests[p]...) {
				if via := above(q, root, map[string]bool{p: true}); q != p && via != nil {
					t.Errorf("%s (or its tests) depends on %s, which is built on %s: %s", p, via[len(via)-1], root, strings.Join(append([]string{p}, via...), " -> "))
					break
				}
			}
		}
	}
	require.NotNil(t, above(golist.Module+"/examples/gemm", golist.Module+"/cudart", map[string]bool{}), "the walk finds what is built on cudart")
}

// testKit says whether a program importing the package at importPath
// imports a test kit: testing or a package under it, testify, a package
// named for tests as httptest and cudarttest are, or the conformance suite.
func testKit(importPath string) bool {
	name := path.Base(importPath)
	return importPath == "testing" || strings.HasPrefix(importPath, "testing/") ||
		strings.HasPrefix(importPath, "github.com/stretchr/testify") ||
		strings.HasSuffix(name, "test") || name == "conformance"
}

// TestReadmeProgramImportsNoTestKit: the README's complete program, which
// users copy into their own main, chooses its runtime and runs with no test
// kit, as a main never imports net/http/httptest.
func TestReadmeProgramImportsNoTestKit(t *testing.T) {
	program := goBlocks(t, readme(t))[0]
	f, err := parser.ParseFile(token.NewFileSet(), "hello.go", program, parser.ImportsOnly)
	require.NoError(t, err)
	require.NotEmpty(t, f.Imports)
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		require.NoError(t, err)
		assert.False(t, testKit(p), "the README's program imports %s", p)
	}
}

func TestTestKitRule(t *testing.T) {
	for p, want := range map[string]bool{
		"testing":                            true,
		"testing/fstest":                     true,
		"net/http/httptest":                  true,
		golist.Module + "/cudart/cudarttest": true,
		golist.Module + "/cudart/cudarttest/conformance": true,
		"github.com/stretchr/testify/require":            true,
		golist.Module + "/choose":                        false,
		golist.Module + "/cudart":                        false,
		golist.Module + "/pool":                          false,
		"log":                                            false,
	} {
		assert.Equal(t, want, testKit(p), p)
	}
}
