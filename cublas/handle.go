package cublas

import (
	"fmt"
	"sync"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/blas"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// MinWorkspace is the smallest workspace SetWorkspace takes: 4 MiB, the
// workspace cuBLAS takes for itself before Hopper. On Hopper and later
// (H100, H200) it takes 32 MiB, and a smaller workspace leaves some of its
// GEMM kernels unused: give 32 MiB there.
const MinWorkspace = 4 << 20

// Workspace is device memory a handle works in: a *pool.Buffer of the device
// arena, or a slot's buffer. Ptr is asked again before every call that may
// use it, so that memory the pool has since released is refused instead of
// written.
type Workspace interface {
	// Ptr is the memory's device address, or why it cannot be used now.
	Ptr() (cudart.DevicePtr, error)
	// Size is its size in bytes.
	Size() uint64
	// Device is the ordinal of the device it is on.
	Device() int
}

// Handle is a cuBLAS handle (cublasHandle_t) bound to one device and one
// stream, working in a workspace of the caller's: every GEMM is queued on the
// handle's stream, and with a workspace set cuBLAS allocates nothing of its
// own, so that a graph captured from the stream holds no memory node.
//
// A Handle is safe for concurrent use, but its calls are serialised: give
// each goroutine that runs GEMMs at the same time a handle (and a stream and
// a workspace) of its own, as the pool's slots do.
type Handle struct {
	l      *Library
	device int

	mu     sync.Mutex // guards the fields below and orders calls on raw
	raw    uintptr    // the cublasHandle_t; 0 once closed
	stream cudart.Stream
	ws     Workspace
	wsPtr  cudart.DevicePtr
	mode   MathMode
	resets uint64 // the device's resets at NewHandle
}

// NewHandle makes a handle on device with cublasCreate, binds it to stream s
// (cublasSetStream) and sets the default math mode, with TF32 off. cuBLAS
// charges the device a fixed amount of memory per handle, outside any pool:
// see the package documentation for sizing arenas around it. Until
// SetWorkspace, cuBLAS allocates its workspace itself, from the device's
// default memory pool on the stream (cudaMallocAsync), and records that
// allocation into any graph captured from the stream.
func (l *Library) NewHandle(device int, s cudart.Stream) (*Handle, error) {
	if l == nil {
		return nil, fmt.Errorf("%w: nil Library", ErrClosed)
	}
	f := getFrame()
	defer putFrame(f)
	st, err := l.be.Invoke(device, blas.Create, f)
	if err := l.check(err, st, device, "cublasCreate"); err != nil {
		return nil, err
	}
	h := &Handle{l: l, device: device, raw: uintptr(f.Out), resets: l.resets(device)}
	if err := h.SetStream(s); err != nil {
		return nil, h.undo(err)
	}
	if err := h.SetMathMode(MathDefault); err != nil {
		return nil, h.undo(err)
	}
	return h, nil
}

// undo destroys a handle NewHandle could not finish, and returns err with
// the destroy's failure, if any.
func (h *Handle) undo(err error) error {
	f := getFrame()
	defer putFrame(f)
	f.Handle = h.raw
	st, ierr := h.l.be.Invoke(h.device, blas.Destroy, f)
	if derr := h.l.check(ierr, st, h.device, "cublasDestroy(0x%x)", h.raw); derr != nil {
		return fmt.Errorf("%w; undoing it: %w", err, derr)
	}
	return err
}

// Device is the device the handle works on.
func (h *Handle) Device() int { return h.device }

// Stream is the stream the handle's work is queued on.
func (h *Handle) Stream() cudart.Stream {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stream
}

// SetStream binds the handle to s (cublasSetStream): later GEMMs are queued
// on s. The workspace stays set.
func (h *Handle) SetStream(s cudart.Stream) error {
	if err := h.lock("SetStream"); err != nil {
		return err
	}
	defer h.mu.Unlock()
	f := getFrame()
	defer putFrame(f)
	f.Handle, f.Stream = h.raw, uintptr(s)
	st, err := h.l.be.Invoke(h.device, blas.SetStream, f)
	if err := h.l.check(err, st, h.device, "cublasSetStream(0x%x, stream 0x%x)", h.raw, uintptr(s)); err != nil {
		return err
	}
	h.stream = s
	// cublasSetStream drops a workspace set before it, falling back to
	// cuBLAS's own: set ours again.
	if h.ws != nil {
		return h.setWorkspace(f, h.ws)
	}
	return nil
}

// SetWorkspace makes cuBLAS work in ws (cublasSetWorkspace) instead of memory
// it allocates itself. ws must be on the handle's device, at least
// MinWorkspace bytes and usable now; otherwise the error wraps
// ErrInvalidWorkspace and the previous workspace stays. The handle keeps ws
// and asks its Ptr again before each GEMM: a workspace released by its pool
// since is refused then, with ErrInvalidWorkspace, and nothing runs.
func (h *Handle) SetWorkspace(ws Workspace) error {
	if err := h.lock("SetWorkspace"); err != nil {
		return err
	}
	defer h.mu.Unlock()
	f := getFrame()
	defer putFrame(f)
	return h.setWorkspace(f, ws)
}

func (h *Handle) setWorkspace(f *blas.Frame, ws Workspace) error {
	if ws == nil {
		return fmt.Errorf("%w: nil workspace", ErrInvalidWorkspace)
	}
	if d := ws.Device(); d != h.device {
		return fmt.Errorf("%w: the workspace is on device %d, the handle on device %d", ErrInvalidWorkspace, d, h.device)
	}
	if n := ws.Size(); n < MinWorkspace {
		return fmt.Errorf("%w: %d B given, at least %s (%d B) needed", ErrInvalidWorkspace, n, bytesize.Format(MinWorkspace), MinWorkspace)
	}
	p, err := ws.Ptr()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidWorkspace, err)
	}
	f.Handle, f.Ptr, f.Bytes = h.raw, uintptr(p), ws.Size()
	st, ierr := h.l.be.Invoke(h.device, blas.SetWorkspace, f)
	if err := h.l.check(ierr, st, h.device, "cublasSetWorkspace(0x%x, 0x%x, %s)", h.raw, uintptr(p), bytesize.Format(ws.Size())); err != nil {
		return err
	}
	h.ws, h.wsPtr = ws, p
	return nil
}

// Workspace is the workspace set, nil while cuBLAS uses its own.
func (h *Handle) Workspace() Workspace {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ws
}

// MathMode is cuBLAS's math mode (cublasMath_t): whether it may trade
// precision for speed.
type MathMode int32

const (
	// MathDefault is cuBLAS's default: FP32 GEMMs compute in FP32, with no
	// TF32 (unless the environment sets NVIDIA_TF32_OVERRIDE=1, which cuBLAS
	// honours). Handles start in it.
	MathDefault MathMode = 0
	// MathPedantic computes as the IEEE standard says, with no faster
	// approximations at all (CUBLAS_PEDANTIC_MATH).
	MathPedantic MathMode = 2
	// MathTF32 lets FP32 GEMMs use TF32 tensor cores, which round the
	// inputs to a 10-bit mantissa (CUBLAS_TF32_TENSOR_OP_MATH). The fake
	// rounds them the same way.
	MathTF32 MathMode = 3
)

// String names the mode as cuBLAS does.
func (m MathMode) String() string {
	switch m {
	case MathDefault:
		return "CUBLAS_DEFAULT_MATH"
	case MathPedantic:
		return "CUBLAS_PEDANTIC_MATH"
	case MathTF32:
		return "CUBLAS_TF32_TENSOR_OP_MATH"
	}
	return fmt.Sprintf("cublasMath_t(%d)", int32(m))
}

// SetMathMode sets the handle's math mode (cublasSetMathMode).
func (h *Handle) SetMathMode(m MathMode) error {
	if err := h.lock("SetMathMode"); err != nil {
		return err
	}
	defer h.mu.Unlock()
	f := getFrame()
	defer putFrame(f)
	f.Handle, f.Int = h.raw, int32(m)
	st, err := h.l.be.Invoke(h.device, blas.SetMathMode, f)
	if err := h.l.check(err, st, h.device, "cublasSetMathMode(0x%x, %s)", h.raw, m); err != nil {
		return err
	}
	h.mode = m
	return nil
}

// MathMode is the handle's math mode.
func (h *Handle) MathMode() MathMode {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mode
}

// Close destroys the handle (cublasDestroy), which waits for the work queued
// on its stream, and lets the workspace go. A second Close returns nil. A
// failed Close keeps the handle, and the next Close tries again.
func (h *Handle) Close() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.raw == 0 {
		return nil
	}
	if n := h.l.resets(h.device); n != h.resets {
		h.raw, h.ws = 0, nil
		return fmt.Errorf("%w: device %d was reset since NewHandle, which destroyed the handle; it is forgotten", ErrDeviceReset, h.device)
	}
	f := getFrame()
	defer putFrame(f)
	f.Handle = h.raw
	st, err := h.l.be.Invoke(h.device, blas.Destroy, f)
	if err := h.l.check(err, st, h.device, "cublasDestroy(0x%x)", h.raw); err != nil {
		return err
	}
	h.raw, h.ws = 0, nil
	return nil
}

// lock takes h.mu for method and refuses, unlocked again, a call on a nil
// or closed handle, or one a device reset destroyed: cuBLAS would take any
// of them as undefined behaviour.
func (h *Handle) lock(method string) error {
	if h == nil {
		return fmt.Errorf("%w: Handle.%s on a nil Handle", ErrClosed, method)
	}
	h.mu.Lock()
	var err error
	switch {
	case h.raw == 0:
		err = fmt.Errorf("%w: Handle.%s on a closed handle", ErrClosed, method)
	case h.l.resets(h.device) != h.resets:
		err = fmt.Errorf("%w: Handle.%s: device %d was reset since NewHandle, which destroyed the handle; Close it and make another", ErrDeviceReset, method, h.device)
	}
	if err != nil {
		h.mu.Unlock()
	}
	return err
}
