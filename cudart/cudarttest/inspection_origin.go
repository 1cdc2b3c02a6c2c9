package cudarttest

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// origin is where something a leak report lists was made: the outermost
// function of this module's library on the way (pool.New, say), and the
// first frame outside the library, the user's code (or this module's own
// tests) that called it.
type origin struct {
	by   string // e.g. "pool.New"; empty when the caller called the fake directly
	fn   string
	file string
	line int
}

// module is the import path prefix of this module's packages.
const module = "github.com/cudapool/cudapool/"

// String is ", made by pool.New called at x_test.go:42 in pkg.TestX", or
// empty when nothing was recorded.
func (o origin) String() string {
	if o.file == "" {
		return ""
	}
	at := fmt.Sprintf("called at %s:%d in %s", filepath.Base(o.file), o.line, o.fn)
	if o.by == "" {
		return ", " + at
	}
	return ", made by " + o.by + " " + at
}

// birth is f.seq, the call that makes something to be freed, and records on
// a fake that checks leaks (NewFakeT) where the call came from. Walking the
// stack costs a few microseconds, which only calls that allocate pay.
func (f *Fake) birth() int {
	if f.origins != nil {
		f.origins[f.seq] = callerOrigin()
	}
	return f.seq
}

// callerOrigin walks the stack from birth's caller's caller outwards.
func callerOrigin() origin {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	var o origin
	for {
		fr, more := frames.Next()
		if !strings.HasPrefix(fr.Function, module) || strings.HasSuffix(fr.File, "_test.go") {
			o.fn, o.file, o.line = strings.TrimPrefix(fr.Function, module), fr.File, fr.Line
			return o
		}
		if !strings.HasPrefix(fr.Function, module+"cudart/") {
			o.by = strings.TrimPrefix(fr.Function, module)
		}
		if !more {
			return origin{}
		}
	}
}
