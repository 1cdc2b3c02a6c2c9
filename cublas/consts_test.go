package cublas_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/internal/blas"
)

// go doc shows an exported constant's value as written: a literal, never a
// name of an internal package the reader cannot look up.
func TestExportedConstantsAreLiterals(t *testing.T) {
	if _, err := os.Stat("handle.go"); err != nil {
		t.Skip("the package's source is not here: run from the repository")
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	seen := 0
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if !name.IsExported() || i >= len(vs.Values) {
							continue
						}
						seen++
						ast.Inspect(vs.Values[i], func(n ast.Node) bool {
							if sel, ok := n.(*ast.SelectorExpr); ok {
								t.Errorf("%s: const %s names %s of another package: go doc shows the name, not the value", fset.Position(name.Pos()), name.Name, selName(sel))
							}
							return true
						})
					}
				}
			}
		}
	}
	require.NotZero(t, seen, "the package has exported constants")
}

func selName(sel *ast.SelectorExpr) string {
	if id, ok := sel.X.(*ast.Ident); ok {
		return id.Name + "." + sel.Sel.Name
	}
	return sel.Sel.Name
}

// The literals are the C values the binding passes.
func TestConstantsAreCUDAs(t *testing.T) {
	assert.EqualValues(t, blas.OpN, cublas.NoTrans)
	assert.EqualValues(t, blas.OpT, cublas.Trans)
	assert.EqualValues(t, blas.R32F, cublas.Float32)
	assert.EqualValues(t, blas.R16F, cublas.Float16)
	assert.EqualValues(t, blas.R16BF, cublas.BFloat16)
}
