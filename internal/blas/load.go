package blas

import (
	"runtime"

	"github.com/cudapool/cudapool/internal/dl"
)

// Lib is libcublas, loaded: the address of every function of the table.
type Lib struct {
	fns       []uintptr // by Call
	setDevice func(device int) error
}

// symbols is the table as the loader looks it up.
func symbols() []dl.Symbol {
	s := make([]dl.Symbol, Count)
	for c := range Count {
		s[c] = dl.Symbol{Name: c.String()}
	}
	return s
}

// Load opens the first of paths that loads and exports every function of the
// table; the error is a *dl.Failure. setDevice makes a device current on the
// calling OS thread, which stays locked from it to the end of each call that
// needs a device. The library is never unloaded: cuBLAS keeps state for the
// process.
func Load(paths []string, setDevice func(device int) error) (*Lib, string, error) {
	l, err := dl.Open(paths, symbols(), dl.Resident)
	if err != nil {
		return nil, "", err
	}
	return &Lib{fns: l.Fns, setDevice: setDevice}, l.Path, nil
}

// Invoke makes the call, on a locked OS thread with device selected first
// for the calls that need one.
func (l *Lib) Invoke(device int, c Call, f *Frame) (Status, error) {
	args := table[c].args(f)
	if c.Device() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := l.setDevice(device); err != nil {
			return 0, err
		}
	}
	r := dl.Call(l.fns[c], args...)
	if table[c].out {
		f.Out = f.outSlot
	}
	return Status(int32(r)), nil
}

// Text asks cuBLAS for the name and message of st.
func (l *Lib) Text(st Status) (name, msg string) {
	name = dl.GoString(dl.Call(l.fns[GetStatusName], dl.Int(int32(st))))
	msg = dl.GoString(dl.Call(l.fns[GetStatusString], dl.Int(int32(st))))
	if name == "" {
		return KnownText(st)
	}
	return name, msg
}
