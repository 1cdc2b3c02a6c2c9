package pool

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/align"
	"github.com/cudapool/cudapool/cublas"
	"github.com/cudapool/cudapool/cudart"
)

// DefaultBLASWorkspace is the workspace each slot's cuBLAS handle gets when
// SlotLayout.BLASWorkspace is 0: 32 MiB, what cuBLAS takes for itself on
// Hopper (H100, H200).
const DefaultBLASWorkspace = 32 << 20

// slotBLAS is the cuBLAS side of the slots: where each slot's workspace is
// in its device region, and its handles.
type slotBLAS struct {
	lib   *cublas.Library
	off   uint64 // the workspace's offset in a slot's device region
	bytes uint64
	// handles are by slot, set once by NewSlots and never changed after, so
	// that Slot.BLAS reads them without a lock; Close closes them, which
	// makes them refuse every call.
	handles []*cublas.Handle
}

// reserveBLAS makes room for a workspace at the end of every slot's device
// region, when the layout asks for cuBLAS.
func (s *Slots) reserveBLAS(layout SlotLayout) error {
	if layout.BLAS == nil {
		if layout.BLASWorkspace != 0 {
			return fmt.Errorf("%w: NewSlots: a BLASWorkspace of %d B with no BLAS library", ErrInvalidRequest, layout.BLASWorkspace)
		}
		return nil
	}
	n := layout.BLASWorkspace
	if n == 0 {
		n = DefaultBLASWorkspace
	}
	if n < cublas.MinWorkspace {
		return fmt.Errorf("%w: NewSlots: a BLASWorkspace of %d B; cuBLAS needs at least %d B", ErrInvalidRequest, n, uint64(cublas.MinWorkspace))
	}
	off, err := align.Up(s.stride[Device], align.CUDA)
	end := off + n
	// The stride is placed as every buffer is, at 256-byte multiples: a
	// workspace of any size then leaves room for the next slot.
	stride, errEnd := align.Up(end, align.CUDA)
	if err != nil || errEnd != nil || end < off {
		return fmt.Errorf("%w: NewSlots: a slot's buffers and its %d B workspace overflow 2^64 B", ErrInvalidRequest, n)
	}
	s.blas = &slotBLAS{lib: layout.BLAS, off: off, bytes: n}
	s.stride[Device] = stride
	return nil
}

// slotWorkspace is a slot's workspace: fixed memory of the slot's region,
// usable until the Slots close.
type slotWorkspace struct {
	sl  *slot
	ptr cudart.DevicePtr
	n   uint64
}

func (w slotWorkspace) Ptr() (cudart.DevicePtr, error) {
	if w.sl.owner.closedFlag.Load() {
		return 0, fmt.Errorf("%w: the workspace of slot %d", ErrClosed, w.sl.index)
	}
	return w.ptr, nil
}
func (w slotWorkspace) Size() uint64 { return w.n }
func (w slotWorkspace) Device() int  { return w.sl.owner.dev }

// makeHandles gives every slot a handle on its stream, working in its
// workspace; closeHandles destroys them.
func (s *Slots) makeHandles() error {
	b := s.blas
	if b == nil {
		return nil
	}
	b.handles = make([]*cublas.Handle, len(s.slots))
	for i := range s.slots {
		sl := &s.slots[i]
		h, err := b.lib.NewHandle(s.dev, sl.stream)
		if err != nil {
			return fmt.Errorf("pool: the cuBLAS handle of slot %d: %w", i, err)
		}
		b.handles[i] = h
		if err := h.SetWorkspace(slotWorkspace{sl: sl, ptr: sl.dev.Add(b.off), n: b.bytes}); err != nil {
			return fmt.Errorf("pool: the cuBLAS workspace of slot %d: %w", i, err)
		}
	}
	return nil
}

// closeHandles destroys the slots' handles, keeping those it could not for
// the next call.
func (s *Slots) closeHandles() error {
	if s.blas == nil {
		return nil
	}
	var errs []error
	for i, h := range s.blas.handles {
		// A closed handle's Close returns nil: one that failed is tried
		// again.
		if err := h.Close(); err != nil && !errors.Is(err, cublas.ErrDeviceReset) {
			errs = append(errs, fmt.Errorf("pool: destroy the cuBLAS handle of slot %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// BLAS is the slot's cuBLAS handle, lent to the request: bound to the
// slot's stream and working in a workspace of the slot's own, so that GEMMs
// of concurrent requests never share either, and a graph captured on the
// slot's stream holds no memory node. It is the request's from Acquire to
// Release, like the slot's buffers: every request starts with the slot's
// stream, the slot's workspace and the default math mode, whatever the one
// before it set (cublas.Lent), and after Release its calls fail with an
// error wrapping ErrSlotReleased. The Slots destroy the handle at Close.
// NewSlots makes it when the layout names a cuBLAS library
// (SlotLayout.BLAS); without one it is an error wrapping ErrInvalidRequest.
func (sl Slot) BLAS() (cublas.Lent, error) {
	if err := sl.check(); err != nil {
		return cublas.Lent{}, err
	}
	b := sl.s.owner.blas
	if b == nil {
		return cublas.Lent{}, fmt.Errorf("%w: slot %d has no cuBLAS handle: give NewSlots a library in SlotLayout.BLAS", ErrInvalidRequest, sl.s.index)
	}
	return b.handles[sl.s.index].Lend(sl.s, sl.gen), nil
}

// LeaseErr is why lease tok of the slot's cuBLAS handle has ended: tok is
// the generation of the Slot it was lent to (cublas.Guard).
func (d *slot) LeaseErr(tok uint64) error { return Slot{s: d, gen: tok}.check() }

// Workspace is the slot's device buffer r as a cuBLAS workspace, for a
// handle of the caller's own (cublas.Handle.SetWorkspace): usable while the
// slot is held. Once the slot is released, the handle refuses to queue GEMMs
// in it (cublas.ErrInvalidWorkspace), as the next request may hold it. A
// shared buffer is refused: requests at once would share it.
func (sl Slot) Workspace(r Ref) (cublas.Workspace, error) {
	arena, _, size, err := sl.find(r)
	if err != nil {
		return nil, err
	}
	if arena != Device || r.p == sl.s.owner.shared {
		return nil, fmt.Errorf("%w: %s cannot be a workspace: it must be a device buffer of the request's profile", ErrInvalidRequest, r.label())
	}
	p, err := sl.Ptr(r)
	if err != nil {
		return nil, err
	}
	return heldWorkspace{sl: sl, ptr: p, n: size}, nil
}

// heldWorkspace is a buffer of a held slot, usable until its Release.
type heldWorkspace struct {
	sl  Slot
	ptr cudart.DevicePtr
	n   uint64
}

func (w heldWorkspace) Ptr() (cudart.DevicePtr, error) {
	if err := w.sl.check(); err != nil {
		return 0, err
	}
	return w.ptr, nil
}
func (w heldWorkspace) Size() uint64 { return w.n }
func (w heldWorkspace) Device() int  { return w.sl.s.owner.dev }
