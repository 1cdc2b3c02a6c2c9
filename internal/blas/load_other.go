//go:build !(darwin || freebsd || linux || netbsd)

package blas

import "runtime"

// Lib is never loaded where purego has no dlopen.
type Lib struct{}

// LoadFailure says why no candidate loaded.
type LoadFailure struct {
	Tried   []string
	Missing bool
}

func (e *LoadFailure) Error() string { return "no dlopen on " + runtime.GOOS }

// Load fails: the binding loads cuBLAS on Unix only, and the fake in
// cudarttest runs everywhere.
func Load(paths []string, _ func(int) error) (*Lib, string, error) {
	le := &LoadFailure{}
	for _, p := range paths {
		le.Tried = append(le.Tried, p+": no dlopen on "+runtime.GOOS)
	}
	return nil, "", le
}

// Invoke is never called: Load returns no Lib.
func (l *Lib) Invoke(int, Call, *Frame) (Status, error) { return StatusNotInitialized, nil }

// Text reads the statuses cuBLAS names.
func (l *Lib) Text(st Status) (string, string) { return KnownText(st) }
