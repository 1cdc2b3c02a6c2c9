package cublas

import (
	"errors"

	"github.com/cudapool/cudapool/internal/binding"
	"github.com/cudapool/cudapool/internal/blas"
	"github.com/cudapool/cudapool/internal/callerr"
)

// Status is a cuBLAS status code (cublasStatus_t).
type Status int

// Error is a failed cuBLAS call: the status, its cuBLAS name and message, and
// the call that returned it.
type Error struct {
	Status  Status
	Name    string // e.g. "CUBLAS_STATUS_INVALID_VALUE"
	Message string // e.g. "an invalid numeric value was used as an argument"
	Call    string // e.g. "cublasGemmEx(N, N, m 4, n 4, k 4, ...) on device 0"
}

// Error formats the call, the cuBLAS name and the message.
func (e *Error) Error() string {
	return callerr.Text("cublas", e.Call, e.Name, int(e.Status), e.Message)
}

// Is matches any *Error with the same status, so that
// errors.Is(err, cublas.ErrInvalidValue) holds whichever call returned it.
func (e *Error) Is(target error) bool {
	return callerr.Match(target, func(t *Error) bool { return t.Status == e.Status })
}

func newError(call string, st Status, name, msg string) *Error {
	return &Error{Status: st, Name: name, Message: msg, Call: call}
}

func sentinel(st blas.Status) *Error {
	name, msg := blas.KnownText(st)
	return newError("", Status(st), name, msg)
}

// Sentinels for cuBLAS's statuses. Match them with errors.Is; the error itself
// carries the call and cuBLAS's message.
var (
	// ErrNotInitialized: the handle or the library is not initialised
	// (CUBLAS_STATUS_NOT_INITIALIZED).
	ErrNotInitialized = sentinel(blas.StatusNotInitialized)
	// ErrAllocFailed: cuBLAS could not allocate memory, e.g. a handle's
	// fixed memory when the device is full (CUBLAS_STATUS_ALLOC_FAILED).
	ErrAllocFailed = sentinel(blas.StatusAllocFailed)
	// ErrInvalidValue: an argument is out of range, e.g. a leading
	// dimension smaller than the matrix's rows (CUBLAS_STATUS_INVALID_VALUE).
	ErrInvalidValue = sentinel(blas.StatusInvalidValue)
	// ErrArchMismatch: the device lacks a feature the call needs
	// (CUBLAS_STATUS_ARCH_MISMATCH).
	ErrArchMismatch = sentinel(blas.StatusArchMismatch)
	// ErrMappingError: cuBLAS could not access GPU memory
	// (CUBLAS_STATUS_MAPPING_ERROR).
	ErrMappingError = sentinel(blas.StatusMappingError)
	// ErrExecutionFailed: a kernel failed to launch or run
	// (CUBLAS_STATUS_EXECUTION_FAILED).
	ErrExecutionFailed = sentinel(blas.StatusExecutionFailed)
	// ErrInternalError: an internal cuBLAS operation failed, e.g. a CUDA
	// call cuBLAS made (CUBLAS_STATUS_INTERNAL_ERROR).
	ErrInternalError = sentinel(blas.StatusInternalError)
	// ErrNotSupported: the combination of arguments is not supported, e.g.
	// a pair of data types GemmEx has no kernel for
	// (CUBLAS_STATUS_NOT_SUPPORTED).
	ErrNotSupported = sentinel(blas.StatusNotSupported)
	// ErrLicenseError: a licence check failed (CUBLAS_STATUS_LICENSE_ERROR).
	ErrLicenseError = sentinel(blas.StatusLicenseError)
)

// ErrLibraryNotFound means no libcublas could be loaded; the *LoadError that
// wraps it lists every path tried and why each failed.
var ErrLibraryNotFound = errors.New("cublas: cuBLAS library not found")

// ErrSymbolNotFound means the loaded libcublas lacks a function the binding
// needs, usually because it is older than cuBLAS 12.
var ErrSymbolNotFound = errors.New("cublas: symbol not found")

// ErrInvalidOption means an option given to Open was refused: the error
// wrapping it says which.
var ErrInvalidOption = errors.New("cublas: invalid option")

// ErrClosed means a call was made on a Handle after Close, or a handle was
// asked of a closed Library.
var ErrClosed = errors.New("cublas: closed")

// ErrDeviceReset means the handle's device was reset (cudaDeviceReset,
// through cudart) since NewHandle: the reset destroyed the handle with the
// device's context. Calls on it fail with this error; Close forgets it,
// returning this error once and nil after.
var ErrDeviceReset = errors.New("cublas: device reset")

// ErrInvalidWorkspace means SetWorkspace refused a workspace: too small, on
// another device, or not usable memory (a released pool buffer, a host
// buffer however mapped, managed memory). A GEMM on a handle whose workspace has since been released by its
// pool fails with it too, before cuBLAS is called.
var ErrInvalidWorkspace = errors.New("cublas: invalid workspace")

// ErrInvalidStream means NewHandle or SetStream refused a stream: one of
// another device than the handle's, or, on a lent handle (Lent), any but
// the lender's stream.
var ErrInvalidStream = errors.New("cublas: invalid stream")

// LoadError is a failure to load libcublas: what was tried, and why each
// attempt failed.
type LoadError struct {
	Tried []string // each candidate with the loader's message
	Err   error    // ErrLibraryNotFound or ErrSymbolNotFound
}

// Error lists every candidate tried.
func (e *LoadError) Error() string { return binding.LoadMessage("cublas", "libcublas", e.Err, e.Tried) }

// Unwrap returns ErrLibraryNotFound or ErrSymbolNotFound.
func (e *LoadError) Unwrap() error { return e.Err }
