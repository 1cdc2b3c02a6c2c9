//go:build darwin || freebsd || linux || netbsd

package dl

import (
	"runtime"

	"github.com/ebitengine/purego"
)

// rtldNoDelete is RTLD_NODELETE as glibc, musl and the BSDs number it,
// which purego does not name; CUDA loads on Linux only.
const rtldNoDelete = 0x01000

// dlopen loads path on one OS thread, so that the message dlerror reports is
// this dlopen's: dlerror is per thread.
func dlopen(path string, mode Mode) (uintptr, error) {
	flags := purego.RTLD_NOW | purego.RTLD_LOCAL
	if mode&Lazy != 0 {
		flags = purego.RTLD_LAZY | purego.RTLD_LOCAL
	}
	if mode&Resident != 0 {
		flags |= rtldNoDelete
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(path, flags)
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

// dladdr is the file the loader mapped fn from; "" when it cannot say.
func dladdr(fn uintptr) string {
	addr, err := purego.Dlsym(purego.RTLD_DEFAULT, "dladdr")
	if err != nil {
		return ""
	}
	var info [4]uintptr // Dl_info: dli_fname, dli_fbase, dli_sname, dli_saddr
	if Call(addr, fn, Addr(&info)) == 0 {
		return ""
	}
	return GoString(info[0])
}
