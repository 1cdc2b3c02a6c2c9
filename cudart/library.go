package cudart

import (
	"fmt"
	"sync/atomic"

	"github.com/cudapool/cudapool/cudart/internal/calls"
)

var _ Library = (*library)(nil)

// Library is the CUDA runtime and driver loaded by Open. It provides Full:
// every method makes one CUDA call (DeviceName and the memory pool
// thresholds a few, in turn), selecting the device it is given first on the
// same locked OS thread where the call depends on it, and is safe for
// concurrent use. Its Annotations methods call the NVTX tool the process
// runs under, if any, with the heap's device selected (see the package
// documentation); MemHeapRegister selects its device whether or not a tool
// listens, and the others only when one does.
//
// A call leaves its device current on the OS thread that ran it; code that
// makes CUDA calls of its own must select its device itself (SetDevice).
// Close must not run while other calls on the Library are in flight: it
// unloads the code they would be running.
//
// The virtual memory calls that take no device (MemRelease, MemAddressReserve,
// MemAddressFree, MemMap, MemUnmap, MemSetAccess) run in the context of the
// device of the last MemCreate (device 0 before any), which is how the driver
// finds a current context for them.
type Library interface {
	Full
	// Path is the file of the CUDA runtime Open loaded.
	Path() string
	// DriverPath is the file of the CUDA driver Open loaded, or "" when it
	// could not be loaded and the virtual memory calls are unavailable.
	DriverPath() string
	// Close unloads the libraries. It frees nothing: free what was allocated
	// first. Close is idempotent; every other method returns an error
	// wrapping ErrClosed after it.
	Close() error
}

// library is the Library Open returns. Every method of a nil *library returns
// ErrClosed, as after Close.
type library struct {
	be         backend
	path       string
	driverPath string
	driverErr  error // why the driver is not loaded; nil when it is

	// prefetchLocation: cudaMemPrefetchAsync, as Open resolved it, takes a
	// cudaMemLocation and flags (CUDA 13, or _v2 from 12.2) rather than a
	// device ordinal.
	prefetchLocation bool
	// noStreamGetDevice: the runtime lacks cudaStreamGetDevice (before
	// CUDA 12.8); StreamDevice answers from what the Library made.
	noStreamGetDevice bool

	closed    atomic.Bool
	vmmDevice atomic.Int64 // the device of the last MemCreate

	registry registry // modules, functions and destroyed streams, for refusals

	ann annotations // heaps and regions, and the NVTX tool told of them
}

// Path is the file of the CUDA runtime Open loaded.
func (l *library) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// DriverPath is the file of the CUDA driver Open loaded, or "" when it could
// not be loaded and the virtual memory calls are unavailable.
func (l *library) DriverPath() string {
	if l == nil {
		return ""
	}
	return l.driverPath
}

// Close unloads the libraries. It frees nothing: free what was allocated
// first. Close is idempotent; every other method returns an error wrapping
// ErrClosed after it, as on a nil *library.
func (l *library) Close() error {
	if l == nil {
		return fmt.Errorf("%w: nil Library", ErrClosed)
	}
	if l.closed.CompareAndSwap(false, true) {
		l.be.close()
	}
	return nil
}

// fail is the *Error of the method that made call c and got r: its Call is
// c's name followed by format and args, its text the library's for the code
// of whichever call failed (the device selection, for one); for a call not
// made, the library's being closed (codeClosed) or the refusal it met. It is
// called only on failure, so the hot path formats nothing.
func (l *library) fail(c calls.Call, r ret, format string, args ...any) error {
	if r.code == codeClosed {
		return closedError(c)
	}
	if r.refused != nil {
		return r.refused.err(c, format, args...)
	}
	name, msg := l.be.text(r.code, r.failed.Library())
	if name == "" {
		e := NewError("", r.code)
		name, msg = e.Name, e.Message
	}
	return &Error{Code: r.code, Name: name, Message: msg, Call: c.String() + fmt.Sprintf(format, args...)}
}

// unusable reports whether l is nil or closed: no call may be made.
func (l *library) unusable() bool { return l == nil || l.closed.Load() }

// closedError is the error of a method that makes call c, called after Close.
func closedError(c calls.Call) error { return fmt.Errorf("%w: %s", ErrClosed, c) }

// invalid is the error of a call to c refused before it reached CUDA: an
// *Error with CUDA's code for an invalid argument, and why. format and args
// describe the arguments, as for fail.
func invalid(c calls.Call, why, format string, args ...any) error {
	return refused(c, ErrInvalidValue, why, format, args...)
}
