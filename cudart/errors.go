package cudart

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/internal/callerr"
)

// Code is a CUDA error code. Runtime (cudaError_t) and driver (CUresult) codes
// share their numbers for every code this package names.
type Code int

// Error is a failed CUDA call: the code, its CUDA name and message, and the
// call that returned it.
type Error struct {
	Code    Code
	Name    string // e.g. "cudaErrorMemoryAllocation"
	Message string // e.g. "out of memory"
	Call    string // e.g. "cudaMalloc(4.0 GiB) on device 0"
}

// Error formats the call, the CUDA name and the message.
func (e *Error) Error() string { return callerr.Text("cudart", e.Call, e.Name, int(e.Code), e.Message) }

// Is matches any *Error with the same code, so that
// errors.Is(err, cudart.ErrMemoryAllocation) holds for every out-of-memory
// error, whichever call returned it.
func (e *Error) Is(target error) bool {
	return callerr.Match(target, func(t *Error) bool { return t.Code == e.Code })
}

// NewError returns the error for code as call returned it, with the name and
// message CUDA uses for that code.
func NewError(call string, code Code) *Error {
	info, ok := codeInfo[code]
	if !ok {
		info = codeText{fmt.Sprintf("cudaError(%d)", int(code)), "unknown error"}
	}
	return &Error{Code: code, Name: info.name, Message: info.msg, Call: call}
}

type codeText struct{ name, msg string }

// codeInfo holds the names and messages of the codes the fake returns; the
// real binding asks CUDA for the text of every code.
var codeInfo = map[Code]codeText{
	1:   {"cudaErrorInvalidValue", "invalid argument"},
	2:   {"cudaErrorMemoryAllocation", "out of memory"},
	3:   {"cudaErrorInitializationError", "initialization error"},
	4:   {"cudaErrorCudartUnloading", "driver shutting down"},
	17:  {"cudaErrorInvalidDevicePointer", "invalid device pointer"},
	35:  {"cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
	46:  {"cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable"},
	100: {"cudaErrorNoDevice", "no CUDA-capable device is detected"},
	101: {"cudaErrorInvalidDevice", "invalid device ordinal"},
	208: {"cudaErrorAlreadyMapped", "resource already mapped"},
	211: {"cudaErrorNotMapped", "resource not mapped"},
	215: {"cudaErrorUnsupportedLimit", "limit is not supported on this architecture"},
	200: {"cudaErrorInvalidKernelImage", "device kernel image is invalid"},
	218: {"cudaErrorInvalidPtx", "a PTX JIT compilation failed"},
	400: {"cudaErrorInvalidResourceHandle", "invalid resource handle"},
	500: {"cudaErrorSymbolNotFound", "named symbol not found"},
	600: {"cudaErrorNotReady", "device not ready"},
	700: {"cudaErrorIllegalAddress", "an illegal memory access was encountered"},
	708: {"cudaErrorSetOnActiveProcess", "cannot set while device is active in this process"},
	712: {"cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped"},
	713: {"cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"},
	714: {"cudaErrorHardwareStackError", "hardware stack error"},
	715: {"cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
	716: {"cudaErrorMisalignedAddress", "misaligned address"},
	717: {"cudaErrorInvalidAddressSpace", "operation not supported on global/shared address space"},
	718: {"cudaErrorInvalidPc", "invalid program counter"},
	719: {"cudaErrorLaunchFailure", "unspecified launch failure"},
	800: {"cudaErrorNotPermitted", "operation not permitted"},
	801: {"cudaErrorNotSupported", "operation not supported"},
	900: {"cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
	901: {"cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
	903: {"cudaErrorStreamCaptureUnmatched", "capture was not initiated in this stream"},
	906: {"cudaErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream"},
	907: {"cudaErrorCapturedEvent", "operation not permitted on an event last recorded in a capturing stream"},
	999: {"cudaErrorUnknown", "unspecified launch failure"},
}

// Sentinels for the codes callers most often handle. Match them with
// errors.Is; the error itself carries the call and CUDA's message.
var (
	// ErrInvalidValue: an argument was out of range (cudaErrorInvalidValue).
	ErrInvalidValue = NewError("", 1)
	// ErrMemoryAllocation: the device or host is out of memory
	// (cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY).
	ErrMemoryAllocation = NewError("", 2)
	// ErrInitialization: CUDA could not initialise (cudaErrorInitializationError).
	ErrInitialization = NewError("", 3)
	// ErrInvalidDevicePointer: a pointer is not one CUDA gave out.
	ErrInvalidDevicePointer = NewError("", 17)
	// ErrInsufficientDriver: the driver is older than the runtime.
	ErrInsufficientDriver = NewError("", 35)
	// ErrDevicesUnavailable: the device cannot be used
	// (cudaErrorDevicesUnavailable, CUDA_ERROR_DEVICE_UNAVAILABLE). Besides a
	// device that another process holds exclusively, it is what every call
	// on a device returns, cudaDeviceReset included, once the device was
	// reset after a fault CUDA documents as fatal to the process (an illegal
	// address, instruction or program counter, a misaligned address, a
	// hardware stack error, a launch failure): measured on an H100 with CUDA
	// 13.0. Only a new process can use the device again.
	ErrDevicesUnavailable = NewError("", 46)
	// ErrSetOnActiveProcess: a device flag was set after the device was in use.
	ErrSetOnActiveProcess = NewError("", 708)
	// ErrNoDevice: no CUDA-capable device is present.
	ErrNoDevice = NewError("", 100)
	// ErrInvalidDevice: the device ordinal is out of range.
	ErrInvalidDevice = NewError("", 101)
	// ErrAlreadyMapped: a virtual range is already mapped.
	ErrAlreadyMapped = NewError("", 208)
	// ErrNotMapped: a virtual range is not mapped.
	ErrNotMapped = NewError("", 211)
	// ErrInvalidResourceHandle: a stream or memory handle is not valid.
	ErrInvalidResourceHandle = NewError("", 400)
	// ErrIllegalAddress: memory was accessed outside what is mapped or
	// accessible.
	ErrIllegalAddress = NewError("", 700)
	// ErrHostMemoryAlreadyRegistered: a host range was registered twice.
	ErrHostMemoryAlreadyRegistered = NewError("", 712)
	// ErrHostMemoryNotRegistered: a host range was unregistered but never registered.
	ErrHostMemoryNotRegistered = NewError("", 713)
	// ErrNotPermitted: the operation is not permitted.
	ErrNotPermitted = NewError("", 800)
	// ErrNotSupported: the device or driver does not support the operation.
	ErrNotSupported = NewError("", 801)
	// ErrInvalidPTX: PTX text did not compile (cudaErrorInvalidPtx,
	// CUDA_ERROR_INVALID_PTX); the error carries the JIT compiler's log.
	ErrInvalidPTX = NewError("", 218)
	// ErrInvalidImage: the text given as a module is no PTX or binary the
	// driver recognises, e.g. text that does not start with .version
	// (cudaErrorInvalidKernelImage, CUDA_ERROR_INVALID_IMAGE).
	ErrInvalidImage = NewError("", 200)
	// ErrNotFound: a named symbol, such as a kernel, is not in the module
	// (cudaErrorSymbolNotFound, CUDA_ERROR_NOT_FOUND).
	ErrNotFound = NewError("", 500)
	// ErrNotReady: the work asked about has not completed yet.
	ErrNotReady = NewError("", 600)
	// ErrLaunchFailure: a kernel failed while it ran (cudaErrorLaunchFailure).
	ErrLaunchFailure = NewError("", 719)
	// ErrStreamCaptureUnsupported: the call is not permitted while a stream
	// captures; CUDA invalidates the capture.
	ErrStreamCaptureUnsupported = NewError("", 900)
	// ErrStreamCaptureInvalidated: the capture was invalidated by an earlier
	// forbidden call and recorded no graph.
	ErrStreamCaptureInvalidated = NewError("", 901)
	// ErrStreamCaptureUnmatched: the stream is not capturing.
	ErrStreamCaptureUnmatched = NewError("", 903)
	// ErrStreamCaptureImplicit: the call would make the legacy default
	// stream wait for a capturing stream; CUDA invalidates the capture.
	ErrStreamCaptureImplicit = NewError("", 906)
	// ErrCapturedEvent: the event was last recorded in a capturing stream,
	// so it cannot be waited for or timed from the host.
	ErrCapturedEvent = NewError("", 907)
)

// ErrLibraryNotFound means the CUDA runtime library could not be loaded; the
// *LoadError that wraps it lists every path tried and why each failed.
var ErrLibraryNotFound = errors.New("cudart: CUDA runtime library not found")

// ErrSymbolNotFound means a loaded library lacks a function the binding needs,
// usually because it is older than the binding expects.
var ErrSymbolNotFound = errors.New("cudart: symbol not found")

// ErrNoDriverLibrary means libcuda.so.1 could not be loaded, so the virtual
// memory calls (driver API) are unavailable; the runtime calls still work.
var ErrNoDriverLibrary = errors.New("cudart: CUDA driver library (libcuda.so.1) not loaded; virtual memory calls are unavailable")

// ErrInvalidOption means an option given to Open was refused: the error
// wrapping it says which.
var ErrInvalidOption = errors.New("cudart: invalid option")

// ErrClosed means a call was made on a Library after Close.
var ErrClosed = errors.New("cudart: library closed")

// LoadError is a failure to load a library: what was tried, and why each
// attempt failed.
type LoadError struct {
	Library string   // what was being loaded, e.g. "CUDA runtime"
	Tried   []string // each candidate with the loader's message
	Err     error    // ErrLibraryNotFound or ErrSymbolNotFound
}

// Error lists every candidate tried.
func (e *LoadError) Error() string {
	s := fmt.Sprintf("%v: cannot load %s; tried:", e.Err, e.Library)
	for _, t := range e.Tried {
		s += "\n  " + t
	}
	return s
}

// Unwrap returns ErrLibraryNotFound or ErrSymbolNotFound.
func (e *LoadError) Unwrap() error { return e.Err }
