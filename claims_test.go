package cudapool_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A claim is a doc comment of an exported declaration that says it returns
// or wraps a sentinel.
type claim struct {
	pos, pkg, decl string
	// sentinel as the doc writes it: ErrX for its own package's, pkg.ErrX
	// for another's.
	sentinel string
}

// claimRE finds sentinels named as what is returned or wrapped: "wraps
// ErrX", "an error wrapping pool.ErrX", "returns ErrX or ErrY"; "is
// wrapped by" does not count (it names the wrapper, not the wrapped); "fails
// with ErrX", "is refused with ErrX" count.
var claimRE = regexp.MustCompile(`\b(?:wraps|wrapping|returns?|returning|fails?\s+with|refused\s+with)\s+(?:(?:an?|the)\s+(?:error|\*?\w+Error)\s+(?:wrapping|that wraps|matching)\s+)?(` + sentinelPat + `(?:(?:,\s*|,?\s+or\s+|,?\s+and\s+)` + sentinelPat + `)*)\b`)

// sentinelPat is a sentinel as a doc names it: ErrX or pkg.ErrX.
const sentinelPat = `(?:[a-z][a-z0-9]*\.)?Err[A-Z]\w*`

var sentinelRE = regexp.MustCompile(sentinelPat)

// docClaims returns the claims of one file's package documentation and
// exported functions, methods and types, as made by package pkg.
func docClaims(fset *token.FileSet, pkg string, f *ast.File) []claim {
	var out []claim
	add := func(decl string, doc *ast.CommentGroup) {
		if doc == nil {
			return
		}
		for _, m := range claimRE.FindAllStringSubmatch(strings.Join(strings.Fields(doc.Text()), " "), -1) {
			for _, s := range sentinelRE.FindAllString(m[1], -1) {
				out = append(out, claim{fset.Position(doc.Pos()).String(), pkg, decl, s})
			}
		}
	}
	add("package", f.Doc)
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() {
				add(d.Name.Name, d.Doc)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.IsExported() {
					doc := ts.Doc
					if doc == nil && len(d.Specs) == 1 {
						doc = d.Doc
					}
					add(ts.Name.Name, doc)
				}
			}
		}
	}
	return out
}

// sentinelName is e as a sentinel reference, "ErrX" or "pkg.ErrX", or "".
func sentinelName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		if sentinelRE.MatchString(e.Name) {
			return e.Name
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && sentinelRE.MatchString(e.Sel.Name) {
			return x.Name + "." + e.Sel.Name
		}
	case *ast.ParenExpr:
		return sentinelName(e.X)
	case *ast.UnaryExpr:
		return sentinelName(e.X)
	}
	return ""
}

// wrapVerbArgs returns the arguments of a fmt.Errorf call that its format
// wraps with %w, or nil for any other call.
func wrapVerbArgs(c *ast.CallExpr) []ast.Expr {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || len(c.Args) == 0 {
		return nil
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "fmt" || sel.Sel.Name != "Errorf" {
		return nil
	}
	lit, ok := c.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return nil
	}
	format, err := strconv.Unquote(lit.Value)
	if err != nil {
		return nil
	}
	var wrapped []ast.Expr
	for i, verb := range formatVerb.FindAllStringSubmatch(format, -1) {
		if verb[1] == "w" && 1+i < len(c.Args) {
			wrapped = append(wrapped, c.Args[1+i])
		}
	}
	return wrapped
}

// formatVerb is one verb of a format, flags and width skipped; %% is no
// verb, so it is matched apart and its "verb" is "%".
var formatVerb = regexp.MustCompile(`%[-+# 0]*[0-9.*]*([a-zA-Z%])`)

// wrapSites calls found for every expression of f that its package wraps or
// returns as an error: a %w argument of fmt.Errorf, an argument of
// errors.Join, a result of a return statement, an element of a composite
// literal or the right side of an assignment (a typed error's Err field),
// anything an Is or Unwrap method names, and an argument of a call to a
// helper: helpers holds them as "pkg.F", pkg being f's package for a call of
// F.
func wrapSites(f *ast.File, helpers map[string]bool, found func(ast.Expr)) {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if ok && fd.Recv != nil && (fd.Name.Name == "Is" || fd.Name.Name == "Unwrap") && fd.Body != nil {
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if e, ok := n.(ast.Expr); ok {
					found(e)
				}
				return true
			})
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ReturnStmt:
			for _, r := range n.Results {
				found(r)
			}
		case *ast.AssignStmt:
			for _, r := range n.Rhs {
				found(r)
			}
		case *ast.CompositeLit:
			for _, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					e = kv.Value
				}
				found(e)
			}
		case *ast.CallExpr:
			for _, a := range wrapVerbArgs(n) {
				found(a)
			}
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "errors" && sel.Sel.Name == "Join" {
					for _, a := range n.Args {
						found(a)
					}
				}
			}
			callee := ""
			switch fun := n.Fun.(type) {
			case *ast.Ident:
				callee = f.Name.Name + "." + fun.Name
			case *ast.SelectorExpr:
				if x, ok := fun.X.(*ast.Ident); ok {
					callee = x.Name + "." + fun.Sel.Name
				}
			}
			if helpers[callee] {
				for _, a := range n.Args {
					found(a)
				}
			}
		}
		return true
	})
}

// errorHelpers returns, as "pkg.F", the functions that wrap or return one of
// their error parameters (plan's failf, which puts its sentinel in a typed
// error; internal/opt's Apply), or pass it to such a function (opt's
// Configure), so that a sentinel passed to them counts as wrapped.
func errorHelpers(byPkg map[string][]*ast.File) map[string]bool {
	helpers := map[string]bool{}
	for found := -1; found != len(helpers); {
		found = len(helpers)
		addErrorHelpers(byPkg, helpers)
	}
	return helpers
}

// addErrorHelpers adds to helpers the functions that wrap or return one of
// their error parameters, or pass it to one of helpers.
func addErrorHelpers(byPkg map[string][]*ast.File, helpers map[string]bool) {
	for _, f := range slices.Concat(slices.Collect(maps.Values(byPkg))...) {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Body == nil {
				continue
			}
			params := map[string]bool{}
			for _, p := range fd.Type.Params.List {
				if id, ok := p.Type.(*ast.Ident); ok && id.Name == "error" {
					for _, n := range p.Names {
						params[n.Name] = true
					}
				}
			}
			wrapSites(&ast.File{Name: f.Name, Decls: []ast.Decl{fd}}, helpers, func(e ast.Expr) {
				if id, ok := e.(*ast.Ident); ok && params[id.Name] {
					helpers[f.Name.Name+"."+fd.Name.Name] = true
				}
			})
		}
	}
}

// wrappedSentinels returns, for each package, the sentinels its sources wrap
// or return: "ErrX" for its own, "pkg.ErrX" for another package's. A
// sentinel that is a status code (cudart's var ErrX = NewError("", code),
// cublas's sentinel(status): any initializer but errors.New) counts as
// wrapped by its package: every error of that code matches it, and the
// codes come from CUDA (or the fake, held to CUDA by the conformance suite),
// not from a line that names the sentinel.
func wrappedSentinels(byPkg map[string][]*ast.File) map[string]map[string]bool {
	wrapped := map[string]map[string]bool{}
	helpers := errorHelpers(byPkg)
	for pkg, files := range byPkg {
		wrapped[pkg] = map[string]bool{}
		for _, f := range files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if c, ok := valueAt(vs, i).(*ast.CallExpr); ok && sentinelRE.MatchString(name.Name) && !isErrorsNew(c) {
							wrapped[pkg][name.Name] = true
						}
					}
				}
			}
			wrapSites(f, helpers, func(e ast.Expr) {
				if s := sentinelName(e); s != "" {
					wrapped[pkg][s] = true
				}
			})
		}
	}
	return wrapped
}

func isErrorsNew(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "errors" && sel.Sel.Name == "New"
}

func valueAt(vs *ast.ValueSpec, i int) ast.Expr {
	if i < len(vs.Values) {
		return vs.Values[i]
	}
	return nil
}

// unproduced returns the claims whose sentinel no package wraps: a claim on
// ErrX holds when its package wraps ErrX; one on q.ErrX when its package
// wraps q.ErrX, or when package q wraps its ErrX (a call that hands on q's
// error as it is).
func unproduced(claims []claim, wrapped map[string]map[string]bool) []claim {
	var bad []claim
	for _, c := range claims {
		ok := wrapped[c.pkg][c.sentinel]
		if q, s, found := strings.Cut(c.sentinel, "."); found {
			ok = ok || wrapped[q][s]
		}
		if !ok {
			bad = append(bad, c)
		}
	}
	return bad
}

// TestDocumentedSentinelsAreWrapped: every exported function, method or type
// whose doc says it returns or wraps a sentinel belongs to a package that
// wraps that sentinel (see wrapSites for what counts as wrapping).
//
// The check is per package, not per function: a function's error usually
// comes from an unexported helper, a typed error's Is or Unwrap method, or a
// call into another of the package's functions, and following those would
// need a call graph with types. Per package, a claim naming a sentinel that
// the package never wraps, a misspelt, renamed or removed one, or another
// package's that no one hands on, fails; a claim whose sentinel the package
// wraps on some other path passes.
//
// Sentinels that are codes (cudart's ErrMemoryAllocation and the like, which
// match any *Error with their code) are made by NewError from a code the
// driver returns, not wrapped by name: claims on them count as held when the
// package wraps or returns them anywhere, as the rule above says, and are
// otherwise reported like any other.
func TestDocumentedSentinelsAreWrapped(t *testing.T) {
	fset := token.NewFileSet()
	byPkg := map[string][]*ast.File{}
	var claims []claim
	libraryFiles(t, fset, parser.ParseComments, func(path string, f *ast.File) {
		key := f.Name.Name
		if internalPath(path) {
			key = "internal/" + key
		}
		byPkg[key] = append(byPkg[key], f)
		claims = append(claims, docClaims(fset, key, f)...)
	})
	wrapped := wrappedSentinels(byPkg)
	t.Logf("%d claims", len(claims))
	for _, c := range unproduced(claims, wrapped) {
		var have []string
		for s := range wrapped[c.pkg] {
			have = append(have, s)
		}
		sort.Strings(have)
		assert.Failf(t, "a documented sentinel is not wrapped", "%s: %s.%s says it wraps %s, which package %s never wraps (it wraps %s)", c.pos, c.pkg, c.decl, c.sentinel, c.pkg, strings.Join(have, ", "))
	}
	require.Greater(t, len(claims), 40, "the docs' claims were found")
}

// TestSentinelClaimCheck runs the check on small packages, so that it is
// seen to fail on a claim that does not hold.
func TestSentinelClaimCheck(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		bad       []string
	}{
		{"wrapped with %w", `package p
// F returns an error wrapping ErrA.
func F() error { return fmt.Errorf("p: f: %w", ErrA) }`, nil},
		{"named but not as %w", `package p
// F returns an error wrapping ErrA.
func F() error { return fmt.Errorf("p: f: %v", ErrA) }`, []string{"ErrA"}},
		{"never wrapped", `package p
// F wraps ErrA or ErrB.
func F() error { return ErrA }`, []string{"ErrB"}},
		{"joined", `package p
// F returns an error wrapping ErrA.
func F(err error) error { return errors.Join(err, ErrA) }`, nil},
		{"through a helper", `package p
// F returns ErrA.
func F() { _ = fail(ErrA, "f") }
func fail(sentinel error, what string) error { return &failure{sentinel, what} }`, nil},
		{"through a helper's helper", `package p
// F returns ErrA.
func F() { _ = configure(nil, ErrA) }
func configure(opts []int, invalid error) error { return apply(opts, invalid) }
func apply(opts []int, invalid error) error { return fmt.Errorf("%w: nil", invalid) }`, nil},
		{"through a typed error", `package p
// E wraps ErrA.
type E struct{}
func (*E) Is(target error) bool { return target == ErrA }`, nil},
		{"another package's, handed on", `package p
// F returns an error wrapping q.ErrA.
func F() error { return nil }`, nil},
		{"another package's, not wrapped there", `package p
// F returns an error wrapping q.ErrB.
func F() error { return nil }`, []string{"q.ErrB"}},
		{"a status code", `package p
// F fails with ErrCode.
func F() error { return nil }
var ErrCode = NewError("", 2)`, nil},
		{"a plain sentinel is not a code", `package p
// F fails with ErrPlain.
func F() error { return nil }
var ErrPlain = errors.New("p: plain")`, []string{"ErrPlain"}},
		{"a typed error's field", `package p
// F returns a *LoadError wrapping ErrA.
func F() error { le := &LoadError{}; le.Err = ErrA; return le }`, nil},
		{"the package documentation", `// Package p: Close makes every call fail with ErrA or ErrClosed.
package p
func F() error { return ErrA }`, []string{"ErrClosed"}},
		{"an unexported function claims nothing", `package p
// f wraps ErrA.
func f() error { return nil }`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", tt.src, parser.ParseComments)
			require.NoError(t, err)
			q, err := parser.ParseFile(fset, "q.go", "package q\nfunc G() error { return ErrA }", 0)
			require.NoError(t, err)
			claims := docClaims(fset, "p", f)
			var bad []string
			for _, c := range unproduced(claims, wrappedSentinels(map[string][]*ast.File{"p": {f}, "q": {q}})) {
				bad = append(bad, c.sentinel)
			}
			assert.Equal(t, tt.bad, bad)
		})
	}
}
