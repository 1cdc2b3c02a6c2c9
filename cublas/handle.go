package cublas

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/blas"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/internal/streamdev"
)

// HandleCharge is the device memory cuBLAS takes for each live handle,
// outside any pool, from cublasCreate to cublasDestroy: 64 MiB, measured on
// H100s with cuBLAS 13.1 (the conformance suite's BLASCharge). The device's
// first live handle takes 2 MiB more, and the first handle of a context
// loads cuBLAS's kernels (2 MiB, kept until the context ends). The fake
// charges the same. Size a device for n handles and a pool as the pool's
// arenas plus n × HandleCharge plus 4 MiB; NewSlots counts HandleCharge for
// each slot of a ForSlots attachment (SlotHandles.OutsideCharge).
const HandleCharge = 64 << 20

// Handle is a cuBLAS handle (cublasHandle_t) bound to one device and one
// stream, working in a workspace of the caller's: every GEMM is queued on the
// handle's stream, and with a workspace set cuBLAS allocates nothing of its
// own, so that a graph captured from the stream holds no memory node.
//
// A Handle is safe for concurrent use, but its calls are serialised: give
// each goroutine that runs GEMMs at the same time a handle (and a stream and
// a workspace) of its own, as the pool's slots do. Its owner may lend it, one
// lease at a time (Lend).
type Handle struct {
	l      *Library
	device int

	mu     sync.Mutex // guards the fields below and orders calls on raw
	raw    uintptr    // the cublasHandle_t; 0 once closed
	cur    settings   // what cuBLAS has now
	home   settings   // what the owner set: where every lease starts
	moved  bool       // a lease may have changed cur from home
	leased bool       // cur is lease tok's
	tok    uint64
	resets uint64 // the device's resets at NewHandle
}

// settings are what a handle's setters change.
type settings struct {
	stream cudart.Stream
	ws     Workspace
	wsPtr  cudart.DevicePtr
	mode   MathMode
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
	if err := l.streamOn(device, s); err != nil {
		return nil, err
	}
	f := getFrame()
	defer putFrame(f)
	st, err := l.be.Invoke(device, blas.Create, f)
	if err := l.check(err, st, device, "cublasCreate"); err != nil {
		if errors.Is(err, ErrAllocFailed) {
			return nil, fmt.Errorf("%w: a handle takes about %s of device memory outside any pool (HandleCharge), the device's first up to 4 MiB more: leave room for it beside the pool's arenas", err, bytesize.Format(HandleCharge))
		}
		return nil, err
	}
	h := &Handle{l: l, device: device, raw: uintptr(f.Out), resets: l.resets(device)}
	// cublasCreate binds the legacy default stream: any other is set.
	if err := h.setStream(f, s, true); err != nil {
		return nil, h.undo(err)
	}
	if err := h.setMathMode(f, MathDefault, true); err != nil {
		return nil, h.undo(err)
	}
	h.home = h.cur
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
func (h *Handle) Device() (int, error) {
	return held(h, h.own("Device", nil), func() int { return h.device })
}

// Stream is the stream the handle's work is queued on.
func (h *Handle) Stream() (cudart.Stream, error) {
	return held(h, h.own("Stream", nil), func() cudart.Stream { return h.home.stream })
}

// SetStream binds the handle to s (cublasSetStream): later GEMMs are queued
// on s. The workspace stays set. A stream of another device is refused with
// ErrInvalidStream, before cuBLAS sees it: a GEMM queued there would fault
// both devices. So is one the handle cannot tell the device of, as far as
// the runtime can say (see the package documentation). On any error the
// handle is as it was, in cuBLAS and here.
func (h *Handle) SetStream(s cudart.Stream) error {
	return h.setHome("SetStream", func(f *blas.Frame) error {
		if s != h.cur.stream {
			if err := h.l.streamOn(h.device, s); err != nil {
				return err
			}
		}
		return h.setStream(f, s, false)
	})
}

// setHome is a setter of the owner's (method): set changes cuBLAS's
// setting and h.cur with h.mu held, and what it set stays the owner's,
// brought back after every lease.
func (h *Handle) setHome(method string, set func(*blas.Frame) error) error {
	f := getFrame()
	defer putFrame(f)
	if err := h.own(method, f); err != nil {
		return err
	}
	defer h.mu.Unlock()
	if err := set(f); err != nil {
		return err
	}
	h.home = h.cur
	return nil
}

// held is a getter's value: get, read with h.mu held, where err, the
// result of taking the lock (own or enter), is nil; err otherwise.
func held[T any](h *Handle, err error, get func() T) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	defer h.mu.Unlock()
	return get(), nil
}

// setStream binds the handle to s, keeping its workspace: nothing changes
// unless both calls succeed. always makes the call when s is the stream
// already bound.
func (h *Handle) setStream(f *blas.Frame, s cudart.Stream, always bool) error {
	if s == h.cur.stream && !always {
		return nil
	}
	var wsPtr cudart.DevicePtr
	if h.cur.ws != nil {
		// cublasSetStream drops a workspace set before it, falling back
		// to cuBLAS's own: ours is set again, so it must be usable.
		p, err := h.usable(h.cur.ws)
		if err != nil {
			return fmt.Errorf("%w: Handle.SetStream(0x%x) on device %d: the handle's workspace is no longer usable (%w); set another first", ErrInvalidWorkspace, uintptr(s), h.device, err)
		}
		wsPtr = p
	}
	if err := h.bindStream(f, s); err != nil {
		return err
	}
	if h.cur.ws != nil {
		if err := h.bindWorkspace(f, wsPtr, h.cur.ws.Size()); err != nil {
			if rerr := h.rebind(f); rerr != nil {
				return fmt.Errorf("%w; restoring stream 0x%x and the workspace: %w", err, uintptr(h.cur.stream), rerr)
			}
			return err
		}
		h.cur.wsPtr = wsPtr
	}
	h.cur.stream = s
	return nil
}

// streamOn refuses s for a handle of device unless s is a stream of device,
// as far as the runtime can tell (cudart.Streams.StreamDevice): cuBLAS
// takes another device's stream, and a GEMM queued on it runs, on CUDA, to
// leave both devices unusable (cudaErrorDevicesUnavailable). A stream whose
// device the runtime cannot tell is taken.
func (l *Library) streamOn(device int, s cudart.Stream) error {
	d, known, err := streamdev.Of(l.rt, device, s)
	switch {
	case !known:
		return nil
	case errors.Is(err, cudart.ErrInvalidDevice):
		// The device is the fault, not the stream.
		return fmt.Errorf("cublas: a handle on device %d: %w", device, err)
	case err != nil:
		return fmt.Errorf("%w: stream 0x%x for a handle of device %d: %w", ErrInvalidStream, uintptr(s), device, err)
	case d != device:
		return fmt.Errorf("%w: stream 0x%x is device %d's, the handle device %d's: a GEMM queued on it would leave both devices unusable", ErrInvalidStream, uintptr(s), d, device)
	}
	return nil
}

// rebind sets cuBLAS's stream and workspace back to cur, after a setter
// that changed them failed half way.
func (h *Handle) rebind(f *blas.Frame) error {
	if err := h.bindStream(f, h.cur.stream); err != nil {
		return err
	}
	if h.cur.ws == nil {
		return nil
	}
	return h.bindWorkspace(f, h.cur.wsPtr, h.cur.ws.Size())
}

func (h *Handle) bindStream(f *blas.Frame, s cudart.Stream) error {
	f.Handle, f.Stream = h.raw, uintptr(s)
	st, err := h.l.be.Invoke(h.device, blas.SetStream, f)
	return h.l.check(err, st, h.device, "cublasSetStream(0x%x, stream 0x%x)", h.raw, uintptr(s))
}

func (h *Handle) bindWorkspace(f *blas.Frame, p cudart.DevicePtr, n uint64) error {
	f.Handle, f.Ptr, f.Bytes = h.raw, uintptr(p), n
	st, err := h.l.be.Invoke(h.device, blas.SetWorkspace, f)
	return h.l.check(err, st, h.device, "cublasSetWorkspace(0x%x, 0x%x, %s)", h.raw, uintptr(p), bytesize.Format(n))
}

// Close destroys the handle (cublasDestroy), which waits for the work queued
// on its stream, and lets the workspace go. A second Close returns nil. A
// failed Close keeps the handle, and the next Close tries again. Leases of
// it fail with ErrClosed from then on.
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
		h.forget()
		return fmt.Errorf("%w: device %d was reset since NewHandle, which destroyed the handle; it is forgotten", ErrDeviceReset, h.device)
	}
	f := getFrame()
	defer putFrame(f)
	f.Handle = h.raw
	st, err := h.l.be.Invoke(h.device, blas.Destroy, f)
	if err := h.l.check(err, st, h.device, "cublasDestroy(0x%x)", h.raw); err != nil {
		return err
	}
	h.forget()
	return nil
}

// forget drops the destroyed handle and its workspaces.
func (h *Handle) forget() {
	h.raw, h.cur, h.home = 0, settings{}, settings{}
}

// own takes h.mu for the owner's method and, for one that calls cuBLAS
// (f, the frame for the calls, not nil), brings back the owner's settings
// if a lease changed them: the lease, if it goes on, starts again from them.
// It refuses, unlocked again, what lock refuses, and fails as restore does.
// A method that only reads reports the owner's settings.
func (h *Handle) own(method string, f *blas.Frame) error {
	if err := h.lock(method); err != nil {
		return err
	}
	if f == nil || !h.moved {
		return nil
	}
	if err := h.restore(f); err != nil {
		h.mu.Unlock()
		return fmt.Errorf("cublas: Handle.%s: %w", method, err)
	}
	h.leased = false
	return nil
}

// restore sets cuBLAS back to the owner's settings after a lease changed
// them: stream, workspace and math mode, whichever the lease set. Until
// it succeeds, the handle stays marked as moved, to be restored again.
func (h *Handle) restore(f *blas.Frame) error {
	want := h.home
	var wsPtr cudart.DevicePtr
	if want.ws != nil {
		p, err := h.usable(want.ws)
		if err != nil {
			return fmt.Errorf("restoring the owner's workspace: %w", err)
		}
		wsPtr = p
	}
	if err := h.bindStream(f, want.stream); err != nil {
		return err
	}
	h.cur.stream, h.cur.ws = want.stream, nil
	if want.ws != nil {
		if err := h.bindWorkspace(f, wsPtr, want.ws.Size()); err != nil {
			return err
		}
		h.cur.ws, h.cur.wsPtr = want.ws, wsPtr
	}
	if err := h.setMathMode(f, want.mode, true); err != nil {
		return err
	}
	h.moved = false
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
	err := h.gone(method)
	if err != nil {
		h.mu.Unlock()
	}
	return err
}

// gone says why the handle cannot be called, if it cannot: it is closed,
// or a device reset destroyed it. The caller holds h.mu.
func (h *Handle) gone(method string) error {
	switch {
	case h.raw == 0:
		return fmt.Errorf("%w: Handle.%s on a closed handle", ErrClosed, method)
	case h.l.resets(h.device) != h.resets:
		return fmt.Errorf("%w: Handle.%s: device %d was reset since NewHandle, which destroyed the handle; Close it and make another", ErrDeviceReset, method, h.device)
	}
	return nil
}
