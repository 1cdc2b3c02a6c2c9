package cudart

import (
	"os"

	"github.com/cudapool/cudapool/internal/dl"
	"github.com/cudapool/cudapool/internal/opt"
)

// The environment variables that name the libraries to load, tried after
// the paths given as options and before the default names; Open's
// documentation names them for users.
const (
	envRuntimeLibrary = "CUDAPOOL_CUDART"
	envDriverLibrary  = "CUDAPOOL_CUDA_DRIVER"
)

// defaultRuntimeNames are the runtime's names in the order tried: the
// unversioned name a toolkit installs, then the sonames of the CUDA versions
// the binding supports, newest first; then the same in the toolkit's default
// directory, for hosts where ldconfig does not list it.
var defaultRuntimeNames = []string{
	"libcudart.so",
	"libcudart.so.13",
	"libcudart.so.12",
	"/usr/local/cuda/lib64/libcudart.so",
	"/usr/local/cuda/lib64/libcudart.so.13",
	"/usr/local/cuda/lib64/libcudart.so.12",
}

// defaultDriverNames is the driver's soname, which the driver package puts on
// the loader's path.
var defaultDriverNames = []string{"libcuda.so.1"}

// Option configures Open. Options are values made by the With functions of
// this package; a nil one is refused with an error wrapping ErrInvalidOption.
type Option interface{ opt.Option[config] }

// set makes the package's options, none of which can fail.
var set = opt.Set[config]

type config struct {
	runtimePath string
	driverPath  string
}

// WithLibraryPath makes Open try path first for the CUDA runtime, before
// $CUDAPOOL_CUDART and the default names.
func WithLibraryPath(path string) Option {
	return set(func(c *config) { c.runtimePath = path })
}

// WithDriverLibraryPath makes Open try path first for the CUDA driver, before
// $CUDAPOOL_CUDA_DRIVER and libcuda.so.1. It must be the driver the runtime
// itself loads (the one the loader finds as libcuda.so.1): memory from a
// second copy of the driver is not visible to the runtime.
func WithDriverLibraryPath(path string) Option {
	return set(func(c *config) { c.driverPath = path })
}

// Open loads the CUDA runtime and, if it can, the driver, and looks up every
// function the binding calls. It initialises nothing on a GPU.
//
// The runtime is the first of these that loads: the WithLibraryPath path,
// the path in $CUDAPOOL_CUDART (e.g. /opt/cuda/lib64/libcudart.so.13), then
// libcudart.so and the sonames of CUDA 13 and 12, by the loader's search
// and in /usr/local/cuda/lib64. If none loads, the error is a
// *LoadError wrapping ErrLibraryNotFound that lists each path with the
// loader's message; if the first that loads lacks a function, a *LoadError
// wrapping ErrSymbolNotFound that names every function it lacks. Open needs
// no cgo: the libraries are loaded and called through purego.
//
// The driver is the first that loads of the WithDriverLibraryPath path, the
// path in $CUDAPOOL_CUDA_DRIVER and libcuda.so.1. It is needed only by the
// virtual memory calls and DeviceName. If it cannot be loaded, Open still
// succeeds and those calls return an error wrapping ErrNoDriverLibrary that
// says why.
func Open(opts ...Option) (Library, error) {
	var c config
	if err := opt.Configure(&c, opts, ErrInvalidOption); err != nil {
		return nil, err
	}
	l, err := load(dl.Candidates(c.runtimePath, os.Getenv(envRuntimeLibrary), defaultRuntimeNames...), dl.Candidates(c.driverPath, os.Getenv(envDriverLibrary), defaultDriverNames...))
	if err != nil {
		return nil, err // a nil *library would make a non-nil Library
	}
	return l, nil
}
