package cublas

import (
	"fmt"
	"os"
	"sync"

	"github.com/cudapool/cudapool/cublas/internal/fakeblas"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/binding"
	"github.com/cudapool/cudapool/internal/blas"
	"github.com/cudapool/cudapool/internal/dl"
	"github.com/cudapool/cudapool/internal/opt"
)

// EnvLibrary names the cuBLAS library to load, e.g.
// /usr/local/cuda/lib64/libcublas.so.13; tried after WithLibraryPath's path
// and before the default names.
const EnvLibrary = "CUDAPOOL_CUBLAS"

// defaultNames are cuBLAS's names in the order tried: the sonames of the
// versions the binding supports, newest first, then the same in the
// toolkit's default directory.
var defaultNames = []string{
	"libcublas.so.13",
	"libcublas.so.12",
	"/usr/local/cuda/lib64/libcublas.so.13",
	"/usr/local/cuda/lib64/libcublas.so.12",
}

// Option configures Open. Options are values made by the With functions of
// this package; a nil one is refused with an error wrapping ErrInvalidOption.
type Option interface{ opt.Option[config] }

type config struct {
	path string
}

// WithLibraryPath makes Open try path first, before $CUDAPOOL_CUBLAS and the
// default names.
func WithLibraryPath(path string) Option {
	return opt.Set(func(c *config) { c.path = path })
}

// Library is cuBLAS for one runtime: libcublas for a cudart.Library, the
// fake's CPU implementation for a cudarttest.Fake or a wrapper of one. Make handles with
// NewHandle. A Library is safe for concurrent use.
type Library struct {
	rt   cudart.Runtime
	dev  cudart.Device // tells device resets; nil for a runtime without
	be   blas.Backend
	path string
}

// Open returns cuBLAS for rt. On the fake runtime of cudarttest, bare or
// inside a wrapper that names it (cudart.As), as the runtime a program
// chooses does, it is the fake's, computed on the CPU, and no library is
// loaded; on any other runtime it loads libcublas at run time,
// through purego (no cgo), from the first of: the WithLibraryPath path,
// $CUDAPOOL_CUBLAS, libcublas.so.13, libcublas.so.12, and the same in
// /usr/local/cuda/lib64. If none loads, the error is a *LoadError wrapping
// ErrLibraryNotFound that lists each path with the loader's message; if the
// first that loads lacks a function, one wrapping ErrSymbolNotFound that
// names them.
//
// rt must select devices (cudart.Device): cuBLAS works on the calling
// thread's current device, which the binding selects, on a locked OS thread,
// before each call that needs it.
func Open(rt cudart.Runtime, opts ...Option) (*Library, error) {
	var c config
	if err := opt.Configure(&c, opts, ErrInvalidOption); err != nil {
		return nil, err
	}
	f, dev, err := binding.Choose(rt, "cuBLAS", ErrInvalidOption)
	if err != nil {
		return nil, err
	}
	if f != nil {
		return &Library{rt: rt, dev: dev, be: fakeblas.Open(f), path: "fake"}, nil
	}
	lib, path, err := blas.Load(dl.Candidates(c.path, os.Getenv(EnvLibrary), defaultNames...), dev.SetDevice)
	if err != nil {
		if tried, cause, ok := binding.LoadFailure(err, ErrLibraryNotFound, ErrSymbolNotFound); ok {
			return nil, &LoadError{Tried: tried, Err: cause}
		}
		return nil, err
	}
	return &Library{rt: rt, dev: dev, be: lib, path: path}, nil
}

// resets is how many times device was reset through cudart.
func (l *Library) resets(device int) uint64 {
	if l.dev == nil {
		return 0
	}
	return l.dev.DeviceResets(device)
}

// Path is the file loaded, as it was named to the loader; "fake" for the
// fake runtime's cuBLAS.
func (l *Library) Path() string { return l.path }

// Version is a cuBLAS version.
type Version struct {
	Major, Minor, Patch int
}

// String is the version as "13.1.0".
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Version is the version of the cuBLAS loaded (cublasGetProperty); the fake's
// is the cuBLAS whose behaviour it follows.
func (l *Library) Version() (Version, error) {
	var v [3]int
	for i, prop := range []int32{blas.PropMajor, blas.PropMinor, blas.PropPatch} {
		f := getFrame()
		f.Int = prop
		st, err := l.be.Invoke(0, blas.GetProperty, f)
		v[i] = int(int32(f.Out))
		putFrame(f)
		if err := l.check(err, st, noDevice, "cublasGetProperty(%d)", prop); err != nil {
			return Version{}, err
		}
	}
	return Version{v[0], v[1], v[2]}, nil
}

// noDevice marks a call that runs on no device, for check.
const noDevice = -1

// check turns what Invoke returned into the error of call, nil on success.
func (l *Library) check(err error, st blas.Status, device int, format string, args ...any) error {
	if device != noDevice {
		format += " on device %d"
		args = append(args, device)
	}
	if err != nil {
		return fmt.Errorf("cublas: "+format+": selecting the device: %w", append(args, err)...)
	}
	if st == blas.StatusSuccess {
		return nil
	}
	name, msg := l.be.Text(st)
	return newError(fmt.Sprintf(format, args...), Status(st), name, msg)
}

var framePool = sync.Pool{New: func() any { return new(blas.Frame) }}

func getFrame() *blas.Frame { return framePool.Get().(*blas.Frame) }

func putFrame(f *blas.Frame) {
	*f = blas.Frame{}
	framePool.Put(f)
}
