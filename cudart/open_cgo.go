//go:build cgo

package cudart

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "lib_cgo.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// load opens the first runtime candidate that loads and resolves its
// functions, then does the same for the driver, whose absence is not an error.
func load(runtimes, drivers []string) (loaded, error) {
	lib := (*C.cp_lib)(C.calloc(1, C.sizeof_cp_lib))
	if lib == nil {
		return loaded{}, fmt.Errorf("cannot allocate the function table (%d B)", C.sizeof_cp_lib)
	}
	path, err := openRuntime(lib, runtimes)
	if err != nil {
		C.free(unsafe.Pointer(lib))
		return loaded{}, err
	}
	ld := loaded{be: &cgoBackend{lib: lib}, path: path}
	ld.driverPath, ld.driverErr = openDriver(lib, drivers)
	return ld, nil
}

func openRuntime(lib *C.cp_lib, paths []string) (string, error) {
	le := &LoadError{Library: "CUDA runtime", Err: ErrLibraryNotFound}
	for _, p := range paths {
		h, msg := dlopen(p, false)
		if h == nil {
			le.Tried = append(le.Tried, p+": "+msg)
			continue
		}
		missing := make([]C.int, C.cudapool_rt_count())
		if n := C.cudapool_resolve_rt(lib, h, &missing[0]); n > 0 {
			C.cudapool_dlclose(h)
			le.Tried = append(le.Tried, p+": "+missingList(missing[:n], len(missing), func(i C.int) *C.char { return C.cudapool_rt_name(i) }))
			le.Err = ErrSymbolNotFound
			return "", le
		}
		return objectPath(h, "cudaGetErrorName", p), nil
	}
	return "", le
}

// openDriver loads libcuda with RTLD_NODELETE: the driver runs threads of its
// own and the runtime keeps using it, so it must never be unmapped.
func openDriver(lib *C.cp_lib, paths []string) (string, error) {
	le := &LoadError{Library: "CUDA driver", Err: ErrNoDriverLibrary}
	for _, p := range paths {
		h, msg := dlopen(p, true)
		if h == nil {
			le.Tried = append(le.Tried, p+": "+msg)
			continue
		}
		missing := make([]C.int, C.cudapool_drv_count())
		if n := C.cudapool_resolve_drv(lib, h, &missing[0]); n > 0 {
			C.cudapool_dlclose(h)
			le.Tried = append(le.Tried, p+": "+missingList(missing[:n], len(missing), func(i C.int) *C.char { return C.cudapool_drv_name(i) }))
			le.Err = fmt.Errorf("%w: %w", ErrNoDriverLibrary, ErrSymbolNotFound)
			return "", le
		}
		return objectPath(h, "cuInit", p), nil
	}
	return "", le
}

func dlopen(path string, nodelete bool) (unsafe.Pointer, string) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	nd := C.int(0)
	if nodelete {
		nd = 1
	}
	r := C.cudapool_dlopen(cpath, nd)
	if r.handle == nil {
		return nil, strings.TrimPrefix(C.GoString(&r.msg[0]), path+": ")
	}
	return r.handle, ""
}

// objectPath is the file the loader mapped for handle, found through one of
// its symbols, or name when the loader cannot say.
func objectPath(h unsafe.Pointer, symbol, name string) string {
	cs := C.CString(symbol)
	defer C.free(unsafe.Pointer(cs))
	if p := C.cudapool_object_path(h, cs); p != nil {
		return C.GoString(p)
	}
	return name
}

// missingList names the functions a library lacks, in the binding's order.
func missingList(idx []C.int, needed int, name func(C.int) *C.char) string {
	names := make([]string, len(idx))
	for i, j := range idx {
		names[i] = C.GoString(name(j))
	}
	return fmt.Sprintf("lacks %d of the %d functions needed: %s", len(names), needed, strings.Join(names, ", "))
}
