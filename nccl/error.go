package nccl

import (
	"errors"
	"strings"

	"github.com/cudapool/cudapool/internal/binding"
	"github.com/cudapool/cudapool/internal/callerr"
	"github.com/cudapool/cudapool/internal/ncclabi"
)

// Result is an NCCL result code (ncclResult_t).
type Result int

// Error is a failed NCCL call: its result, NCCL's name and message for it,
// the call, and NCCL's last error (ncclGetLastError), which says what went
// wrong where the result only says what kind of wrong.
type Error struct {
	Result  Result
	Name    string // e.g. "ncclInvalidArgument"
	Message string // ncclGetErrorString's text
	Call    string // e.g. "ncclAllReduce(count 1024, ncclFloat32, ncclSum) on rank 0, device 0"
	Last    string // ncclGetLastError's text; "" when NCCL gave none
}

// Error formats the call, the name, the message and the last error.
func (e *Error) Error() string {
	s := callerr.Text("nccl", e.Call, e.Name, int(e.Result), e.Message)
	if e.Last != "" {
		s += ": " + strings.TrimSpace(e.Last)
	}
	return s
}

// Is matches any *Error with the same result, so that errors.Is(err,
// nccl.ErrInvalidArgument) holds whichever call returned it.
func (e *Error) Is(target error) bool {
	return callerr.Match(target, func(t *Error) bool { return t.Result == e.Result })
}

func sentinel(r ncclabi.Result) *Error {
	return &Error{Result: Result(r), Name: r.Name(), Message: ncclabi.KnownString(r)}
}

// Sentinels for NCCL's results. Match them with errors.Is; the error itself
// carries the call, NCCL's message and its last error.
var (
	// ErrUnhandledCudaError: a CUDA call NCCL made failed, e.g. an
	// allocation on a full device (ncclUnhandledCudaError).
	ErrUnhandledCudaError = sentinel(ncclabi.UnhandledCudaError)
	// ErrSystemError: a system call failed, e.g. a socket of the bootstrap
	// (ncclSystemError).
	ErrSystemError = sentinel(ncclabi.SystemError)
	// ErrInternalError: NCCL failed an internal check (ncclInternalError).
	ErrInternalError = sentinel(ncclabi.InternalError)
	// ErrInvalidArgument: an argument is out of range, e.g. a root past the
	// ranks or an unknown data type (ncclInvalidArgument).
	ErrInvalidArgument = sentinel(ncclabi.InvalidArgument)
	// ErrInvalidUsage: the call breaks NCCL's rules, e.g. two ranks of one
	// communicator on one device, or ranks that disagree on a collective
	// (ncclInvalidUsage).
	ErrInvalidUsage = sentinel(ncclabi.InvalidUsage)
	// ErrRemoteError: a peer failed or its process exited, or the network
	// did (ncclRemoteError).
	ErrRemoteError = sentinel(ncclabi.RemoteError)
)

// ErrTimeout means a communicator's operation was still in progress when
// its bound (WithTimeout) ended: the binding aborted the communicators it
// was waiting for, which are closed after it. A rank that never joined, a
// peer that died or ranks that call different collectives end this way.
var ErrTimeout = errors.New("nccl: timed out")

// ErrLibraryNotFound means no libnccl could be loaded; the *LoadError that
// wraps it lists every path tried and why each failed.
var ErrLibraryNotFound = errors.New("nccl: NCCL library not found")

// ErrSymbolNotFound means the loaded libnccl lacks a function the binding
// needs, usually because it is older than NCCL 2.19.
var ErrSymbolNotFound = errors.New("nccl: symbol not found")

// ErrNotSupported means the library loaded lacks an optional function, e.g.
// window registration before NCCL 2.27.
var ErrNotSupported = errors.New("nccl: not supported by the library loaded")

// ErrInvalidOption means an option or an argument was refused before NCCL
// was called: the error wrapping it says which.
var ErrInvalidOption = errors.New("nccl: invalid option")

// ErrClosed means a call was made on a communicator after Destroy or Abort
// (the binding's own, or the one a timeout made).
var ErrClosed = errors.New("nccl: communicator closed")

// LoadError is a failure to load libnccl: what was tried, and why each
// attempt failed.
type LoadError struct {
	Tried []string // each candidate with the loader's message
	Err   error    // ErrLibraryNotFound or ErrSymbolNotFound
}

// Error lists every candidate tried.
func (e *LoadError) Error() string { return binding.LoadMessage("nccl", "libnccl", e.Err, e.Tried) }

// Unwrap returns ErrLibraryNotFound or ErrSymbolNotFound.
func (e *LoadError) Unwrap() error { return e.Err }
