package cublas

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/blas"
)

// Guard tells a lent handle whether its lease still holds: LeaseErr(tok) is
// why lease tok has ended, nil while it holds. A pool's slot is one, its
// generation the lease's token. It is asked under the handle's lock, so it
// must not call the handle. It is an alias of an unnamed interface, the
// same type as pool.Guard, so that *Handle is a pool.Lender[Lent] without
// this package importing pool.
type Guard = interface {
	LeaseErr(tok uint64) error
}

// Lent is a Handle lent for one lease (Lend): a pool's slot lends one to
// each request (pool.Attached[cublas.Lent], with SlotHandles), the
// request's from Acquire to Release. It runs GEMMs and changes
// settings as the Handle does, with two differences:
//
//   - A lease starts from the owner's settings (stream, workspace, math
//     mode), whatever the lease before it set: its first call sets back
//     what that lease changed, and when nothing was changed it costs one
//     comparison.
//   - Once its Guard says the lease has ended, every method fails with an
//     error wrapping the Guard's (pool.ErrSlotReleased for a slot), even
//     though the next lease works on the same cublasHandle_t.
//
// Its stream is the owner's: SetStream to any other is refused with
// ErrInvalidStream, because the lender knows when the lease's work is done
// by that stream alone (a slot's Release asks about the slot's stream), and
// work queued elsewhere could still run when the next lease begins. To run
// GEMMs on a stream of the request's own, make a Handle for it.
//
// The zero Lent is no handle: its methods fail with ErrClosed.
type Lent struct {
	h   *Handle
	g   Guard
	tok uint64
}

// Lend lends h for lease tok of g: the Lent works while g.LeaseErr(tok) is
// nil. tok must differ from one lease of h to the next (a generation
// count): a lease whose token differs from the last one's starts from the
// owner's settings. Lend allocates nothing and calls nothing; the owner
// keeps h, and its own calls on h see its own settings.
func (h *Handle) Lend(g Guard, tok uint64) Lent { return Lent{h: h, g: g, tok: tok} }

// Gemm is Handle.Gemm for the lease: queued on the slot's stream, it
// returns before it runs, and operands that run past their memory fault
// the device (700, sticky) at the next synchronisation, as on CUDA.
func (b Lent) Gemm(g Gemm) error { return b.gemm(blas.GemmEx, g, 1) }

// GemmStridedBatched is Handle.GemmStridedBatched for the lease.
func (b Lent) GemmStridedBatched(g Gemm, batch int) error {
	return b.gemm(blas.GemmStridedBatchedEx, g, batch)
}

func (b Lent) gemm(c blas.Call, g Gemm, batch int) error {
	f := getFrame()
	defer putFrame(f)
	if err := b.enter(c.String(), f); err != nil {
		return err
	}
	defer b.h.mu.Unlock()
	return b.h.queue(f, c, g, batch)
}

// SetMathMode is Handle.SetMathMode for this lease only.
func (b Lent) SetMathMode(m MathMode) error {
	return b.set("SetMathMode", func(f *blas.Frame) error { return b.h.setMathMode(f, m, false) })
}

// SetWorkspace is Handle.SetWorkspace for this lease only: the next lease
// works in the owner's workspace again.
func (b Lent) SetWorkspace(ws Workspace) error {
	return b.set("SetWorkspace", func(f *blas.Frame) error { return b.h.setWorkspace(f, ws) })
}

// set is a setter of the lease's (method): set changes cuBLAS's setting
// and the handle's with its lock held, for this lease only.
func (b Lent) set(method string, set func(*blas.Frame) error) error {
	f := getFrame()
	defer putFrame(f)
	if err := b.enter(method, f); err != nil {
		return err
	}
	defer b.h.mu.Unlock()
	return b.h.moveBy(set(f))
}

// SetStream accepts the owner's stream, which the lease is on already, and
// refuses any other with ErrInvalidStream (see Lent).
func (b Lent) SetStream(s cudart.Stream) error {
	if err := b.enter("SetStream", nil); err != nil {
		return err
	}
	defer b.h.mu.Unlock()
	if home := b.h.home.stream; s != home {
		return fmt.Errorf("%w: Lent.SetStream(0x%x): a lent handle stays on its lender's stream 0x%x, the only one the lender waits for before the next lease", ErrInvalidStream, uintptr(s), uintptr(home))
	}
	return nil
}

// Stream is the stream the lease's work is queued on: the owner's.
func (b Lent) Stream() (cudart.Stream, error) {
	return held(b.h, b.enter("Stream", nil), func() cudart.Stream { return b.h.view(b.tok).stream })
}

// Workspace is the lease's workspace: the owner's unless the lease set one.
func (b Lent) Workspace() (Workspace, error) {
	return held(b.h, b.enter("Workspace", nil), func() Workspace { return b.h.view(b.tok).ws })
}

// MathMode is the lease's math mode: the owner's unless the lease set one.
func (b Lent) MathMode() (MathMode, error) {
	return held(b.h, b.enter("MathMode", nil), func() MathMode { return b.h.view(b.tok).mode })
}

// Device is the device the handle works on.
func (b Lent) Device() (int, error) {
	return held(b.h, b.enter("Device", nil), func() int { return b.h.device })
}

// enter takes the handle's lock for the lease's method, or says why not:
// the lease has ended, or the handle is closed. For a method that calls
// cuBLAS (f not nil), the first call of a lease sets back what an earlier
// lease changed. A panic in the Guard leaves the lock free.
func (b Lent) enter(method string, f *blas.Frame) error {
	h := b.h
	if h == nil || b.g == nil {
		return fmt.Errorf("%w: Lent.%s on the zero Lent", ErrClosed, method)
	}
	h.mu.Lock()
	held := false
	defer func() {
		if !held {
			h.mu.Unlock()
		}
	}()
	// The lender's word first: a lease that ended says so, whatever
	// became of the handle since.
	if err := b.g.LeaseErr(b.tok); err != nil {
		return fmt.Errorf("cublas: Lent.%s: the lease has ended: %w", method, err)
	}
	if err := h.gone(method); err != nil {
		return err
	}
	if f != nil && !(h.leased && h.tok == b.tok) {
		if h.moved {
			if err := h.restore(f); err != nil {
				return fmt.Errorf("cublas: Lent.%s: setting back what the last lease changed: %w", method, err)
			}
		}
		h.leased, h.tok = true, b.tok
	}
	held = true
	return nil
}

// view is what lease tok sees: its own settings once it has begun, the
// owner's before. The caller holds h.mu.
func (h *Handle) view(tok uint64) *settings {
	if h.leased && h.tok == tok {
		return &h.cur
	}
	return &h.home
}

// moveBy marks the handle moved from the owner's settings when a lease's
// setter succeeded, and returns its error. The caller holds h.mu.
func (h *Handle) moveBy(err error) error {
	if err == nil {
		h.moved = true
	}
	return err
}
