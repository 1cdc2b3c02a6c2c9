package nccl

import (
	"fmt"
	"os"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/binding"
	"github.com/cudapool/cudapool/internal/dl"
	"github.com/cudapool/cudapool/internal/ncclabi"
	"github.com/cudapool/cudapool/internal/opt"
	"github.com/cudapool/cudapool/nccl/internal/fakenccl"
)

// EnvLibrary names the NCCL library to load, e.g.
// /usr/lib/x86_64-linux-gnu/libnccl.so.2; tried after WithLibraryPath's path
// and before the default names.
const EnvLibrary = "CUDAPOOL_NCCL"

// defaultNames are NCCL's names in the order tried: the soname, then the
// directories NCCL's packages and the CUDA toolkit install it in.
var defaultNames = []string{
	"libnccl.so.2",
	"/usr/lib/x86_64-linux-gnu/libnccl.so.2",
	"/usr/lib/aarch64-linux-gnu/libnccl.so.2",
	"/usr/local/cuda/lib64/libnccl.so.2",
}

// Option configures Open. Options are values made by the With functions of
// this package; a nil one is refused with an error wrapping ErrInvalidOption.
type Option interface {
	apply(*config)
}

type option func(*config)

func (o option) apply(c *config) { o(c) }

type config struct {
	path string
}

// WithLibraryPath makes Open try path first, before $CUDAPOOL_NCCL and the
// default names.
func WithLibraryPath(path string) Option {
	return option(func(c *config) { c.path = path })
}

// Library is NCCL for one runtime: libnccl for a cudart.Library, the fake's
// CPU implementation for a cudarttest.Fake or a wrapper of one. Make
// communicators with UniqueID and InitRank, or InitAll. A Library is safe for
// concurrent use.
type Library struct {
	rt    cudart.Runtime
	be    ncclabi.Backend
	path  string
	calls blockingCalls // on blocking communicators
}

// Open returns NCCL for rt. On the fake runtime of cudarttest, bare or
// inside a wrapper that names it (cudart.As), it is the fake's, computed on
// the CPU, and no library is loaded; on any other runtime it loads libnccl
// at run time, through purego (no cgo), from the first of: the
// WithLibraryPath path, $CUDAPOOL_NCCL, libnccl.so.2, and the same in
// /usr/lib/x86_64-linux-gnu, /usr/lib/aarch64-linux-gnu and
// /usr/local/cuda/lib64. If none loads, the error is a *LoadError wrapping
// ErrLibraryNotFound that lists each path with the loader's message; if the
// first that loads lacks a function, one wrapping ErrSymbolNotFound that
// names them. Window registration (NCCL 2.27) is optional: a library without
// it loads.
//
// rt must select devices (cudart.Device): NCCL works on the calling thread's
// current device, which the binding selects, on a locked OS thread, before
// each call that needs it.
func Open(rt cudart.Runtime, opts ...Option) (*Library, error) {
	var c config
	if err := opt.Apply(opts, ErrInvalidOption, func(o Option) error { o.apply(&c); return nil }); err != nil {
		return nil, err
	}
	f, dev, err := binding.Choose(rt, "NCCL", ErrInvalidOption)
	if err != nil {
		return nil, err
	}
	if f != nil {
		return &Library{rt: rt, be: fakenccl.Open(f), path: "fake"}, nil
	}
	lib, path, err := ncclabi.Load(dl.Candidates(c.path, os.Getenv(EnvLibrary), defaultNames...), dev.SetDevice)
	if err != nil {
		if tried, cause, ok := binding.LoadFailure(err, ErrLibraryNotFound, ErrSymbolNotFound); ok {
			return nil, &LoadError{Tried: tried, Err: cause}
		}
		return nil, err
	}
	return &Library{rt: rt, be: lib, path: path}, nil
}

// Path is the file loaded, as it was named to the loader; "fake" for the
// fake runtime's NCCL.
func (l *Library) Path() string { return l.path }

// Version is an NCCL version.
type Version struct {
	Major, Minor, Patch int
}

// String is the version as "2.28.9".
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Version is the version of the NCCL loaded (ncclGetVersion); the fake's is
// the NCCL whose behaviour it follows.
func (l *Library) Version() (Version, error) {
	fs := []ncclabi.Frame{{Call: ncclabi.GetVersion}}
	if err := l.do(fs, "ncclGetVersion", nil); err != nil {
		return Version{}, err
	}
	code := int(fs[0].Out)
	if code < 10000 { // NCCL_VERSION before 2.9: X*1000 + Y*100 + Z
		return Version{code / 1000, code % 1000 / 100, code % 100}, nil
	}
	return Version{code / 10000, code % 10000 / 100, code % 100}, nil
}

// HasWindows reports whether the library loaded registers windows
// (ncclCommWindowRegister, NCCL 2.27 and later).
func (l *Library) HasWindows() bool { return l.be.Has(ncclabi.CommWindowRegister) }

// UniqueID is an ncclUniqueId: the rendezvous of a communicator's ranks.
// One rank makes it (Library.UniqueID) and hands it to the others, over the
// network between processes; it is 128 bytes, and safe to copy.
type UniqueID [ncclabi.UniqueIDBytes]byte

// UniqueID makes the id of a new communicator (ncclGetUniqueId). NCCL starts
// a listener for the ranks' rendezvous in this process.
func (l *Library) UniqueID() (UniqueID, error) {
	fs := []ncclabi.Frame{{Call: ncclabi.GetUniqueID}}
	if err := l.do(fs, "ncclGetUniqueId", nil); err != nil {
		return UniqueID{}, err
	}
	return UniqueID(fs[0].ID), nil
}

// do runs fs and turns the first failure into an error: the call described
// by call, on comm c (nil for none).
func (l *Library) do(fs []ncclabi.Frame, call string, c *Comm) error {
	n, err := l.be.Do(fs)
	return l.outcome(fs, n, err, call, c)
}

// outcome is do's error for what ncclabi.Backend.Do returned for fs.
func (l *Library) outcome(fs []ncclabi.Frame, n int, err error, call string, c *Comm) error {
	if err != nil {
		return fmt.Errorf("nccl: %s: selecting device %d: %w", call, fs[n].Device, err)
	}
	if n == 0 {
		return nil
	}
	// Only the result is read: a split's frame gets its Out from NCCL's
	// thread (see Comm.Split).
	r := fs[n-1].Result
	if ok(r) {
		return nil
	}
	return l.fail(r, call, c)
}

// fail is the *Error of result r of call, with NCCL's text for r and its
// last error.
func (l *Library) fail(r ncclabi.Result, call string, c *Comm) *Error {
	fs := []ncclabi.Frame{{Call: ncclabi.GetErrorString, Int: int32(r)}, {Call: ncclabi.GetLastError}}
	if c != nil {
		fs[1].Comm = c.raw
	}
	e := &Error{Result: Result(r), Name: r.Name(), Message: ncclabi.KnownString(r), Call: call}
	if _, err := l.be.Do(fs); err == nil {
		if fs[0].Str != "" {
			e.Message = fs[0].Str
		}
		e.Last = fs[1].Str
	}
	return e
}
