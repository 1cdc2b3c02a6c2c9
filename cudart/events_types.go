package cudart

import "github.com/cudapool/cudapool/internal/enum"

// Event is a cudaEvent_t from EventCreate: a point in a stream's work that
// other streams and the host can wait for, and time.
type Event uintptr

// Graph is a cudaGraph_t: the work a stream capture recorded.
type Graph uintptr

// GraphExec is a cudaGraphExec_t: a Graph instantiated for launch.
type GraphExec uintptr

// CaptureMode is cudaStreamCaptureMode: which calls other threads may make
// while a stream captures.
type CaptureMode int

// The values of cudaStreamCaptureMode.
const (
	// CaptureModeGlobal forbids potentially unsafe calls (a synchronous
	// copy, cudaMalloc) on every thread while the capture lasts. CUDA also
	// requires StreamEndCapture on the OS thread that began the capture:
	// lock the goroutine to its thread (runtime.LockOSThread) from
	// StreamBeginCapture to StreamEndCapture.
	CaptureModeGlobal CaptureMode = 0
	// CaptureModeThreadLocal forbids them on the capturing thread only, with
	// the same thread rule as CaptureModeGlobal.
	CaptureModeThreadLocal CaptureMode = 1
	// CaptureModeRelaxed forbids nothing beyond what breaks the capture
	// itself, and lets any thread end it.
	CaptureModeRelaxed CaptureMode = 2
)

// String returns the CUDA name of m, e.g. "cudaStreamCaptureModeGlobal".
func (m CaptureMode) String() string { return captureModes.Name(m) }

var captureModes = enum.Table[CaptureMode]{Prefix: "cudaStreamCaptureMode", Names: []string{"Global", "ThreadLocal", "Relaxed"}, Unknown: "cudaStreamCaptureMode(%d)"}
