package cudapool_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/kvcache"
	"github.com/cudapool/cudapool/plan"
	"github.com/cudapool/cudapool/pool"
	"github.com/cudapool/cudapool/vmem"
)

// errorText is a literal error message of the module's sources: the format
// of an errors.New, fmt.Errorf or log call, where it is, and its package.
type errorText struct {
	pos, pkg, text string
	log, sentinel  bool
}

// libraryFiles parses, with mode, every non-test Go file of a library
// package (examples are commands, which print their name before an error)
// and hands each to visit with its path.
func libraryFiles(t *testing.T, fset *token.FileSet, mode parser.Mode, visit func(path string, f *ast.File)) {
	t.Helper()
	for _, path := range sourceFiles(t, false) {
		f, err := parser.ParseFile(fset, path, nil, mode)
		require.NoError(t, err)
		visit(path, f)
	}
}

// internalPath says whether a file of libraryFiles is in an internal
// package: internal/ at the top or under a package (cudart/internal/).
func internalPath(path string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(filepath.Dir(path)), "/"), "internal")
}

// errorTexts returns the literal error messages of the library's sources,
// and the module's package names.
func errorTexts(t *testing.T) ([]errorText, map[string]bool) {
	t.Helper()
	var texts []errorText
	pkgs := map[string]bool{}
	fset := token.NewFileSet()
	libraryFiles(t, fset, 0, func(path string, f *ast.File) {
		pkg := f.Name.Name
		pkgs[pkg] = true
		sentinels := map[ast.Expr]bool{}
		for _, decl := range f.Decls {
			if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if strings.HasPrefix(name.Name, "Err") && i < len(vs.Values) {
							sentinels[vs.Values[i]] = true
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) == 0 {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			lit, ok := c.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			x, _ := sel.X.(*ast.Ident)
			logger, _ := sel.X.(*ast.SelectorExpr)
			isErr := x != nil && (x.Name == "errors" && sel.Sel.Name == "New" || x.Name == "fmt" && sel.Sel.Name == "Errorf")
			isLog := logger != nil && logger.Sel.Name == "log" && strings.Contains("Debug Info Warn Error", sel.Sel.Name)
			if !isErr && !isLog {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			require.NoError(t, err)
			texts = append(texts, errorText{pos: fset.Position(lit.Pos()).String(), pkg: pkg, text: s, log: isLog, sentinel: sentinels[c]})
			return true
		})
	})
	require.True(t, pkgs["pool"] && pkgs["cudart"], "the walk found the library")
	return texts, pkgs
}

// TestErrorWording holds every literal error message and log message of the
// library to one wording:
//   - a sentinel (var ErrX = errors.New(...)) and a log message start with
//     their package's prefix ("pool: "); a message that starts with a
//     package's prefix starts with its own (internal packages speak for the
//     package that returns their errors, which adds its prefix);
//   - no message holds its own prefix twice;
//   - sizes are "N B" (or humanized): no "%d bytes", no "N-byte".
//
// Messages that start with %w take the prefix of the sentinel they wrap;
// bare ones are wrapped by their caller, under its prefix.
func TestErrorWording(t *testing.T) {
	texts, pkgs := errorTexts(t)
	prefix := regexp.MustCompile(`^([a-z][a-z0-9]*): `)
	bytesWord := regexp.MustCompile(`%d bytes|%d-byte|\d-byte`)
	checked := 0
	for _, e := range texts {
		own := e.pkg + ": "
		internal := internalPath(e.pos)
		if m := prefix.FindStringSubmatch(e.text); m != nil && pkgs[m[1]] && !internal {
			assert.Equal(t, own, m[0], "%s: %q has another package's prefix", e.pos, e.text)
		}
		if (e.sentinel || e.log) && !internal {
			assert.True(t, strings.HasPrefix(e.text, own), "%s: %q: a sentinel or log message starts with %q", e.pos, e.text, own)
		}
		assert.LessOrEqual(t, strings.Count(e.text, own), 1, "%s: %q repeats its prefix", e.pos, e.text)
		assert.NotRegexp(t, bytesWord, e.text, "%s: %q: sizes as \"N B\"", e.pos, e.text)
		checked++
	}
	require.Greater(t, checked, 100, "the walk found the library's messages")
}

// TestTypedErrorsSayTheirSentinel: a typed error's message holds what its
// sentinel says (after the package prefix, for CUDA's codes, whose call
// comes between), and its prefix once.
func TestTypedErrorsSayTheirSentinel(t *testing.T) {
	for _, tt := range []struct {
		err      error
		sentinel error
		prefix   string
	}{
		{&pool.ExhaustedError{Arena: pool.Device, Need: 5 << 30, Have: 4 << 30, LargestName: "kv-cache", LargestBytes: 1 << 30}, pool.ErrExhausted, "pool: "},
		{&pool.CorruptedError{Damaged: []pool.Corruption{{Arena: pool.Device, Name: "w", Size: 4097}}}, pool.ErrCorrupted, "pool: "},
		{&kvcache.NoPagesError{Op: "Append", Seq: 3, Needed: 2, Free: 1}, kvcache.ErrNoPages, "kvcache: "},
		{&vmem.ExhaustedError{Asked: 3 << 30, Max: 2 << 30}, vmem.ErrExhausted, "vmem: "},
		{&plan.NoFitError{Capacity: 6 << 10, LowerBound: 8 << 10, BestArena: 8 << 10}, plan.ErrNoFit, "plan: "},
		{&cudart.LoadError{Library: "libcudart", Err: cudart.ErrLibraryNotFound, Tried: []string{"libcudart.so.13"}}, cudart.ErrLibraryNotFound, "cudart: "},
		{&cudart.LoadError{Library: "libcudart", Err: cudart.ErrSymbolNotFound}, cudart.ErrSymbolNotFound, "cudart: "},
		{cudart.NewError("cudaMalloc(4.0 GiB) on device 0", 2), cudart.ErrMemoryAllocation, "cudart: "},
	} {
		msg := tt.err.Error()
		require.ErrorIs(t, tt.err, tt.sentinel)
		assert.Contains(t, msg, strings.TrimPrefix(tt.sentinel.Error(), tt.prefix), "%T", tt.err)
		assert.True(t, strings.HasPrefix(msg, tt.prefix), "%q starts with %q", msg, tt.prefix)
		assert.Equal(t, 1, strings.Count(msg, tt.prefix), "%q repeats %q", msg, tt.prefix)
		if _, ok := tt.err.(*cudart.Error); !ok {
			assert.Contains(t, msg, tt.sentinel.Error(), "%T holds its sentinel's whole text", tt.err)
		}
	}
}
