//go:build !(darwin || freebsd || linux || netbsd)

package cudart

import (
	"errors"
	"runtime"

	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// load fails where purego has no dlopen (Windows): the binding loads CUDA on
// Unix only, and the fake in cudarttest works everywhere.
func load(runtimes, _ []string) (loaded, error) {
	le := &LoadError{Library: calls.RuntimeLibrary.String(), Err: ErrLibraryNotFound}
	for _, p := range runtimes {
		le.Tried = append(le.Tried, p+": no dlopen on "+runtime.GOOS)
	}
	return loaded{}, le
}

// close has nothing to unload.
func (b *library) close() {}

// openInjection fails for the same reason as load: no NVTX tool attaches.
func openInjection(path string) (uintptr, error) {
	return 0, errors.New(path + ": no dlopen on " + runtime.GOOS)
}

// dlsym finds nothing, as nothing loads.
func dlsym(uintptr, string) uintptr { return 0 }

// dlclose has nothing to unload.
func dlclose(uintptr) {}
