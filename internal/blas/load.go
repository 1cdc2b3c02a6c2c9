//go:build darwin || freebsd || linux || netbsd

package blas

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"

	"github.com/cudapool/cudapool/internal/cstr"
)

// Lib is libcublas, loaded: the address of every function of the table.
type Lib struct {
	fns       [Count]uintptr
	setDevice func(device int) error
}

// LoadFailure says why no candidate loaded: each path tried and the loader's
// message, and whether the first library that loaded lacked functions.
type LoadFailure struct {
	Tried   []string
	Missing bool
}

func (e *LoadFailure) Error() string { return strings.Join(e.Tried, "; ") }

// Load opens the first of paths that loads and exports every function of the
// table. setDevice makes a device current on the calling OS thread, which
// stays locked from it to the end of each call that needs a device. The
// library is never unloaded: cuBLAS keeps state for the process.
func Load(paths []string, setDevice func(device int) error) (*Lib, string, error) {
	le := &LoadFailure{}
	for _, p := range paths {
		h, err := dlopen(p)
		if err != nil {
			le.Tried = append(le.Tried, p+": "+strings.TrimPrefix(err.Error(), p+": "))
			continue
		}
		l := &Lib{setDevice: setDevice}
		var missing []string
		for c := range Count {
			if l.fns[c], err = purego.Dlsym(h, c.String()); err != nil {
				missing = append(missing, c.String())
			}
		}
		if len(missing) > 0 {
			le.Tried = append(le.Tried, fmt.Sprintf("%s: lacks %d of the %d functions needed: %s", p, len(missing), Count, strings.Join(missing, ", ")))
			le.Missing = true
			return nil, "", le
		}
		return l, p, nil
	}
	return nil, "", le
}

// dlopen is purego.Dlopen on one OS thread, so that the message dlerror
// reports is this dlopen's: dlerror is per thread.
func dlopen(path string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL|rtldNoDelete)
}

// rtldNoDelete is glibc's RTLD_NODELETE, which purego does not name.
const rtldNoDelete = 0x01000

// Invoke makes the call through purego, on a locked OS thread with device
// selected first for the calls that need one.
func (l *Lib) Invoke(device int, c Call, f *Frame) (Status, error) {
	args := table[c].args(f)
	if c.Device() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := l.setDevice(device); err != nil {
			return 0, err
		}
	}
	r, _, _ := purego.SyscallN(l.fns[c], args...)
	if table[c].out {
		f.Out = f.outSlot
	}
	return Status(int32(r)), nil
}

// Text asks cuBLAS for the name and message of st.
func (l *Lib) Text(st Status) (name, msg string) {
	n, _, _ := purego.SyscallN(l.fns[GetStatusName], u32(int32(st)))
	m, _, _ := purego.SyscallN(l.fns[GetStatusString], u32(int32(st)))
	name, msg = cstr.Copy(n), cstr.Copy(m)
	if name == "" {
		return KnownText(st)
	}
	return name, msg
}
