//go:build !(darwin || freebsd || linux || netbsd)

package dl

import (
	"errors"
	"runtime"
)

// dlopen fails where purego has no dlopen (Windows): the bindings load their
// libraries on Unix only, and the fakes work everywhere.
func dlopen(path string, _ Mode) (uintptr, error) {
	return 0, errors.New(path + ": no dlopen on " + runtime.GOOS)
}

// dlsym finds nothing, as nothing loads.
func dlsym(uintptr, string) uintptr { return 0 }

// dlclose has nothing to unload.
func dlclose(uintptr) {}

// dladdr cannot say.
func dladdr(uintptr) string { return "" }
