package cudart

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxExportedNames bounds the top-level names package cudart exports: a new
// ability folds into the names there are (a method rather than a function,
// one generic function rather than one a type, a String rather than a table,
// an unexported constant where users never name it) before it adds one.
const maxExportedNames = 130

// exportedNames lists the exported top-level identifiers of f: functions,
// types, constants and variables, each constant of a block once; methods and
// fields are not top-level.
func exportedNames(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.IsExported() {
				names = append(names, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						names = append(names, s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							names = append(names, n.Name)
						}
					}
				}
			}
		}
	}
	return names
}

func TestExportedNames(t *testing.T) {
	const src = `package p
const (
	A = iota
	b
	C, D = 1, 2
)
type T int
type (
	u int
	V struct{ F int }
)
func (T) M() {}
func F() {}
func g() {}
var W, x int
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"A", "C", "D", "T", "V", "F", "W"}, exportedNames(f))
}

// TestExportedNamesBounded: package cudart exports at most maxExportedNames
// top-level names.
func TestExportedNamesBounded(t *testing.T) {
	if _, err := os.Stat("runtime.go"); errors.Is(err, fs.ErrNotExist) {
		t.Skip("cudart's sources are not here: run from the repository")
	}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		require.NoError(t, err)
		names = append(names, exportedNames(f)...)
	}
	slices.Sort(names)
	t.Logf("%d exported names", len(names))
	assert.LessOrEqual(t, len(names), maxExportedNames, "package cudart exports %d top-level names (at most %d): %s",
		len(names), maxExportedNames, strings.Join(names, " "))
}
