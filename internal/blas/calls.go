// Package blas is the machinery of the cuBLAS binding: the one table of the
// cuBLAS functions package cublas calls, the frame their arguments travel in,
// and the Backend that runs them, libcublas through internal/dl or the fake
// beside the binding (cublas/internal/fakeblas). It is not part of a user's
// API.
//
// A new cuBLAS call is a row of the table here (its constant, C name and how
// its frame becomes the C arguments), the cublas method that fills the frame
// and turns the status into an error, and the fake's case in
// cublas/internal/fakeblas/fakeblas.go: three files.
package blas

import (
	"fmt"

	"github.com/cudapool/cudapool/internal/dl"
	"github.com/cudapool/cudapool/internal/enum"
)

// Call is one cuBLAS function, a row of the table.
type Call uint8

// The cuBLAS functions the binding calls.
const (
	GetStatusName Call = iota
	GetStatusString
	GetProperty
	Create
	Destroy
	SetStream
	SetWorkspace
	SetMathMode
	GemmEx
	GemmStridedBatchedEx

	// Count is the number of calls: one more than the last.
	Count
)

// Status is a cublasStatus_t.
type Status int32

// The statuses the fake returns; the names and messages of every status are
// in Text.
const (
	StatusSuccess         Status = 0
	StatusNotInitialized  Status = 1
	StatusAllocFailed     Status = 3
	StatusInvalidValue    Status = 7
	StatusArchMismatch    Status = 8
	StatusMappingError    Status = 11
	StatusExecutionFailed Status = 13
	StatusInternalError   Status = 14
	StatusNotSupported    Status = 15
	StatusLicenseError    Status = 16
)

// Frame is one call's arguments, filled by package cublas, and what the call
// wrote back. Frames live on the heap while C reads them: alpha and beta are
// passed by address (CUBLAS_POINTER_MODE_HOST) and the out-parameter is
// written through its address.
type Frame struct {
	Handle  uintptr // cublasHandle_t
	Stream  uintptr // cudaStream_t
	Ptr     uintptr // a workspace's address
	Bytes   uint64  // a workspace's size
	Int     int32   // a math mode, a library property type or a status
	G       Gemm
	Out     uint64 // what the call wrote through its out-parameter
	outSlot uint64
	args    [maxArgs]uintptr
}

// Gemm is the arguments of cublasGemmEx and cublasGemmStridedBatchedEx, as
// their C types: matrices are column-major.
type Gemm struct {
	TransA, TransB      int32 // cublasOperation_t
	M, N, K             int32
	Alpha, Beta         float32
	A, B, C             uintptr
	AType, BType, CType int32 // cudaDataType
	LDA, LDB, LDC       int32
	StrideA, StrideB    int64
	StrideC             int64
	Batch               int32
	Compute             int32 // cublasComputeType_t
	Algo                int32 // cublasGemmAlgo_t
}

// The C values the binding passes.
const (
	OpN         = 0  // CUBLAS_OP_N
	OpT         = 1  // CUBLAS_OP_T
	R32F        = 0  // CUDA_R_32F
	R16F        = 2  // CUDA_R_16F
	R16BF       = 14 // CUDA_R_16BF
	Compute32F  = 68 // CUBLAS_COMPUTE_32F
	GemmDefault = -1 // CUBLAS_GEMM_DEFAULT
	PropMajor   = 0  // MAJOR_VERSION
	PropMinor   = 1  // MINOR_VERSION
	PropPatch   = 2  // PATCH_LEVEL
)

// TypeName is CUDA's name of data type t, e.g. "CUDA_R_32F".
func TypeName(t int32) string { return typeNames.Name(t) }

var typeNames = enum.Table[int32]{Prefix: "CUDA_R_", Names: []string{R32F: "32F", R16F: "16F", R16BF: "16BF"}, Unknown: "cudaDataType(%d)"}

// maxArgs is the most parameters a function of the table has:
// cublasGemmStridedBatchedEx's 23.
const maxArgs = 23

// row is one function of the table.
type row struct {
	name string
	// device: the call runs on the caller's device, which the backend
	// selects on the same OS thread first; the others need no device.
	device bool
	// args lays f out as the C parameters, in order.
	args func(f *Frame) []uintptr
	// out: the call writes one value through a pointer, read into f.Out.
	out bool
	// str: the call returns a const char* instead of a status.
	str bool
}

var table = [Count]row{
	GetStatusName:   {name: "cublasGetStatusName", args: func(f *Frame) []uintptr { return f.put(dl.Int(f.Int)) }, str: true},
	GetStatusString: {name: "cublasGetStatusString", args: func(f *Frame) []uintptr { return f.put(dl.Int(f.Int)) }, str: true},
	GetProperty:     {name: "cublasGetProperty", args: func(f *Frame) []uintptr { return f.put(dl.Int(f.Int), f.outAddr()) }, out: true},
	Create:          {name: "cublasCreate_v2", device: true, args: func(f *Frame) []uintptr { return f.put(f.outAddr()) }, out: true},
	Destroy:         {name: "cublasDestroy_v2", device: true, args: func(f *Frame) []uintptr { return f.put(f.Handle) }},
	SetStream:       {name: "cublasSetStream_v2", device: true, args: func(f *Frame) []uintptr { return f.put(f.Handle, f.Stream) }},
	SetWorkspace:    {name: "cublasSetWorkspace_v2", device: true, args: func(f *Frame) []uintptr { return f.put(f.Handle, f.Ptr, uintptr(f.Bytes)) }},
	SetMathMode:     {name: "cublasSetMathMode", device: true, args: func(f *Frame) []uintptr { return f.put(f.Handle, dl.Int(f.Int)) }},
	GemmEx: {name: "cublasGemmEx", device: true, args: func(f *Frame) []uintptr {
		g := &f.G
		return f.put(f.Handle, dl.Int(g.TransA), dl.Int(g.TransB), dl.Int(g.M), dl.Int(g.N), dl.Int(g.K), f.alpha(),
			g.A, dl.Int(g.AType), dl.Int(g.LDA), g.B, dl.Int(g.BType), dl.Int(g.LDB), f.beta(),
			g.C, dl.Int(g.CType), dl.Int(g.LDC), dl.Int(g.Compute), dl.Int(g.Algo))
	}},
	GemmStridedBatchedEx: {name: "cublasGemmStridedBatchedEx", device: true, args: func(f *Frame) []uintptr {
		g := &f.G
		return f.put(f.Handle, dl.Int(g.TransA), dl.Int(g.TransB), dl.Int(g.M), dl.Int(g.N), dl.Int(g.K), f.alpha(),
			g.A, dl.Int(g.AType), dl.Int(g.LDA), uintptr(g.StrideA), g.B, dl.Int(g.BType), dl.Int(g.LDB), uintptr(g.StrideB), f.beta(),
			g.C, dl.Int(g.CType), dl.Int(g.LDC), uintptr(g.StrideC), dl.Int(g.Batch), dl.Int(g.Compute), dl.Int(g.Algo))
	}},
}

// String is the C name, e.g. "cublasGemmEx".
func (c Call) String() string {
	if c >= Count {
		return fmt.Sprintf("blas.Call(%d)", uint8(c))
	}
	return table[c].name
}

// Device reports whether c runs on the caller's device.
func (c Call) Device() bool { return table[c].device }

// put stores the C arguments in f, which keeps them on the heap.
func (f *Frame) put(a ...uintptr) []uintptr {
	n := copy(f.args[:], a)
	return f.args[:n]
}

// outAddr is the address the call writes its out-parameter through.
func (f *Frame) outAddr() uintptr { return dl.Addr(&f.outSlot) }

// alpha and beta are the addresses of the scalars, read by cuBLAS during
// the call (host pointer mode).
func (f *Frame) alpha() uintptr { return dl.Addr(&f.G.Alpha) }
func (f *Frame) beta() uintptr  { return dl.Addr(&f.G.Beta) }

// Backend runs the calls of the table: libcublas (Load) or the fake
// (cublas/internal/fakeblas).
type Backend interface {
	// Invoke makes call c with f on device, and returns cuBLAS's status. An
	// error is a failure to select the device, before cuBLAS was called.
	Invoke(device int, c Call, f *Frame) (Status, error)
	// Text is cuBLAS's name and message for st.
	Text(st Status) (name, msg string)
}

// statusText are the names and messages of cuBLAS 13.1; the binding asks
// the library, the fake reads them here.
var statusText = map[Status][2]string{
	StatusSuccess:         {"CUBLAS_STATUS_SUCCESS", "success"},
	StatusNotInitialized:  {"CUBLAS_STATUS_NOT_INITIALIZED", "the library was not initialized"},
	StatusAllocFailed:     {"CUBLAS_STATUS_ALLOC_FAILED", "the resource allocation failed"},
	StatusInvalidValue:    {"CUBLAS_STATUS_INVALID_VALUE", "an unsupported value or parameter was passed to the function"},
	StatusArchMismatch:    {"CUBLAS_STATUS_ARCH_MISMATCH", "an absent device architectural feature is required"},
	StatusMappingError:    {"CUBLAS_STATUS_MAPPING_ERROR", "an access to GPU memory space failed"},
	StatusExecutionFailed: {"CUBLAS_STATUS_EXECUTION_FAILED", "the function failed to launch on the GPU"},
	StatusInternalError:   {"CUBLAS_STATUS_INTERNAL_ERROR", "an internal operation failed"},
	StatusNotSupported:    {"CUBLAS_STATUS_NOT_SUPPORTED", "the requested functionality is not supported"},
	StatusLicenseError:    {"CUBLAS_STATUS_LICENSE_ERROR", "the functionality requested requires some license and an error was detected when trying to check the current licensing"},
}

// KnownText is the name and message of st as cuBLAS 13.1 gives them;
// a status cuBLAS does not name reads "CUBLAS_STATUS_<n>".
func KnownText(st Status) (name, msg string) {
	if t, ok := statusText[st]; ok {
		return t[0], t[1]
	}
	return fmt.Sprintf("CUBLAS_STATUS_%d", int32(st)), "unknown status"
}
