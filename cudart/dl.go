//go:build darwin || freebsd || linux || netbsd

package cudart

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/cudapool/cudapool/cudart/internal/calls"
	"github.com/cudapool/cudapool/internal/dl"
)

// rtldNoDelete is glibc's RTLD_NODELETE, which purego does not name.
const rtldNoDelete = 0x01000

// load opens the first runtime candidate that loads and resolves its
// functions, then does the same for the driver, whose absence is not an error.
func load(runtimes, drivers []string) (loaded, error) {
	b := &library{}
	path, err := b.open(calls.RuntimeLibrary, runtimes, 0)
	if err != nil {
		return loaded{}, err
	}
	ld := loaded{be: b, path: path}
	// The driver runs threads of its own and the runtime keeps using it, so
	// it must never be unmapped.
	ld.driverPath, ld.driverErr = b.open(calls.DriverLibrary, drivers, rtldNoDelete)
	ld.prefetchLocation = b.prefetchTakesLocation()
	ld.noStreamGetDevice = b.fns[calls.StreamGetDevice] == 0
	return ld, nil
}

// open loads the first of paths that loads and resolves lib's functions into
// b.fns. Nothing of b changes when it fails.
func (b *library) open(which calls.Library, paths []string, flags int) (string, error) {
	le := &LoadError{Library: which.String(), Err: ErrLibraryNotFound}
	if which == calls.DriverLibrary {
		le.Err = ErrNoDriverLibrary
	}
	for _, p := range paths {
		h, err := dlopen(p, purego.RTLD_NOW|purego.RTLD_LOCAL|flags)
		if err != nil {
			le.Tried = append(le.Tried, p+": "+strings.TrimPrefix(err.Error(), p+": "))
			continue
		}
		var fns [calls.Count]uintptr
		var missing []string
		needed := 0
		for c := range calls.Count {
			if c.Library() != which {
				continue
			}
			needed++
			if fns[c] = lookup(h, c); fns[c] == 0 && !c.Optional() {
				missing = append(missing, c.String())
			}
		}
		if len(missing) > 0 {
			_ = purego.Dlclose(h)
			le.Tried = append(le.Tried, fmt.Sprintf("%s: lacks %d of the %d functions needed: %s", p, len(missing), needed, strings.Join(missing, ", ")))
			le.Err = ErrSymbolNotFound
			if which == calls.DriverLibrary {
				le.Err = fmt.Errorf("%w: %w", ErrNoDriverLibrary, ErrSymbolNotFound)
			}
			return "", le
		}
		for c, fn := range fns {
			if fn != 0 {
				b.fns[c] = fn
			}
		}
		b.handles[which] = h
		return objectPath(fns[firstOf(which)], p), nil
	}
	return "", le
}

// dlopen is purego.Dlopen on one OS thread, so that the message dlerror
// reports is this dlopen's: dlerror is per thread.
func dlopen(path string, mode int) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(path, mode)
}

// openInjection loads an NVTX tool's injection library with the mode NVTX's
// own loader uses: a tool may leave symbols to be bound on first call.
func openInjection(path string) (uintptr, error) {
	return dlopen(path, purego.RTLD_LAZY|purego.RTLD_LOCAL)
}

// dlsym is the address of name in the library h; 0 when it is not exported.
func dlsym(h uintptr, name string) uintptr {
	fn, err := purego.Dlsym(h, name)
	if err != nil {
		return 0
	}
	return fn
}

// dlclose unloads h, which nothing will call into.
func dlclose(h uintptr) { _ = purego.Dlclose(h) }

// lookup is the address of c's function in the library h, its alt name
// first; 0 when neither is exported.
func lookup(h uintptr, c calls.Call) uintptr {
	if alt := c.Alt(); alt != "" {
		if fn := dlsym(h, alt); fn != 0 {
			return fn
		}
	}
	return dlsym(h, c.String())
}

// firstOf is the first Call of lib in the table.
func firstOf(which calls.Library) calls.Call {
	for c := range calls.Count {
		if c.Library() == which {
			return c
		}
	}
	return 0
}

// prefetchTakesLocation reports whether cudaMemPrefetchAsync, as resolved,
// takes a cudaMemLocation and flags: the _v2 of CUDA 12.2 to 12.9 does, and
// so does the plain name from CUDA 13 on.
func (b *library) prefetchTakesLocation() bool {
	if h := b.handles[calls.RuntimeLibrary]; h != 0 {
		if v2, err := purego.Dlsym(h, calls.MemPrefetchAsync.Alt()); err == nil && v2 == b.fns[calls.MemPrefetchAsync] {
			return true
		}
	}
	var version int32
	r, _, _ := purego.SyscallN(b.fns[calls.RuntimeGetVersion], uintptr(unsafe.Pointer(&version)))
	return int32(r) == 0 && version >= 13000
}

// objectPath is the file the loader mapped fn from, as dladdr reports it,
// or name when it cannot say.
func objectPath(fn uintptr, name string) string {
	dladdr, err := purego.Dlsym(purego.RTLD_DEFAULT, "dladdr")
	if err != nil {
		return name
	}
	var info [4]uintptr // Dl_info: dli_fname, dli_fbase, dli_sname, dli_saddr
	if r, _, _ := purego.SyscallN(dladdr, fn, uintptr(unsafe.Pointer(&info))); r == 0 || info[0] == 0 {
		return name
	}
	return dl.GoString(info[0])
}

// close unloads the libraries; the driver stays mapped (RTLD_NODELETE).
func (b *library) close() {
	for i, h := range b.handles {
		if h != 0 {
			_ = purego.Dlclose(h)
			b.handles[i] = 0
		}
	}
}
