package cudart

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/dl"
)

// load opens the first runtime candidate that loads and resolves its
// functions, then does the same for the driver, whose absence is not an error,
// and returns the Library over them.
func load(runtimes, drivers []string) (*library, error) {
	b := &dlBackend{}
	path, err := b.open(calls.RuntimeLibrary, runtimes, 0)
	if err != nil {
		return nil, err
	}
	ld := &library{be: b, path: path}
	// The driver runs threads of its own and the runtime keeps using it, so
	// it must never be unmapped.
	ld.driverPath, ld.driverErr = b.open(calls.DriverLibrary, drivers, dl.Resident)
	ld.prefetchLocation = b.prefetchTakesLocation()
	ld.noStreamGetDevice = b.fns[calls.StreamGetDevice] == 0
	return ld, nil
}

// open loads the first of paths that loads and resolves lib's functions into
// b.fns, and returns the file it mapped. Nothing of b changes when it fails.
func (b *dlBackend) open(which calls.Library, paths []string, mode dl.Mode) (string, error) {
	var of []calls.Call
	var syms []dl.Symbol
	for c := range calls.Count {
		if c.Library() == which {
			of = append(of, c)
			syms = append(syms, dl.Symbol{Name: c.String(), Alt: c.Alt(), Optional: c.Optional()})
		}
	}
	l, err := dl.Open(paths, syms, mode)
	if err != nil {
		var f *dl.Failure
		if !errors.As(err, &f) {
			return "", err
		}
		le := &LoadError{Library: which.String(), Tried: f.Tried, Err: ErrLibraryNotFound}
		switch {
		case which == calls.DriverLibrary && len(f.Missing) > 0:
			le.Err = fmt.Errorf("%w: %w", ErrNoDriverLibrary, ErrSymbolNotFound)
		case which == calls.DriverLibrary:
			le.Err = ErrNoDriverLibrary
		case len(f.Missing) > 0:
			le.Err = ErrSymbolNotFound
		}
		return "", le
	}
	for i, c := range of {
		b.fns[c] = l.Fns[i]
	}
	b.libs[which] = l
	return l.File(), nil
}

// prefetchTakesLocation reports whether cudaMemPrefetchAsync, as resolved,
// takes a cudaMemLocation and flags: the _v2 of CUDA 12.2 to 12.9 does, and
// so does the plain name from CUDA 13 on.
func (b *dlBackend) prefetchTakesLocation() bool {
	if rt := b.libs[calls.RuntimeLibrary]; rt != nil {
		if v2 := rt.Sym(calls.MemPrefetchAsync.Alt()); v2 != 0 && v2 == b.fns[calls.MemPrefetchAsync] {
			return true
		}
	}
	var version int32
	r := dl.Call(b.fns[calls.RuntimeGetVersion], dl.Addr(&version))
	return int32(r) == 0 && version >= 13000
}

// close unloads the libraries; the driver stays mapped (dl.Resident).
func (b *dlBackend) close() {
	for i, l := range b.libs {
		if l != nil {
			l.Close()
			b.libs[i] = nil
		}
	}
}
