package pool

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
)

// Workspace is a device buffer of a held slot lent as a library's scratch
// memory: a cuBLAS handle of the caller's takes it (cublas.Workspace), and
// asks Ptr before each call that may use it. Once the slot is released Ptr
// fails (ErrSlotReleased), as the next request may hold the buffer, and the
// library refuses to queue work in it. The zero Workspace is no memory.
type Workspace struct {
	sl  Slot
	ptr cudart.DevicePtr
	n   uint64
}

// Workspace is the slot's device buffer r as a Workspace, usable while the
// slot is held. A shared buffer is refused (ErrInvalidRequest): requests at
// once would share it.
func (sl Slot) Workspace(r Ref) (Workspace, error) {
	arena, _, size, err := sl.find(r)
	if err != nil {
		return Workspace{}, err
	}
	if arena != Device || r.p == sl.s.owner.shared {
		return Workspace{}, fmt.Errorf("%w: %s cannot be a workspace: it must be a device buffer of the request's profile", ErrInvalidRequest, r.label())
	}
	p, err := sl.Ptr(r)
	if err != nil {
		return Workspace{}, err
	}
	return Workspace{sl: sl, ptr: p, n: size}, nil
}

// Ptr is the buffer's device address while its slot is held, or why not.
func (w Workspace) Ptr() (cudart.DevicePtr, error) {
	if err := w.sl.check(); err != nil {
		return 0, err
	}
	return w.ptr, nil
}

// Size is the buffer's size in bytes.
func (w Workspace) Size() uint64 { return w.n }

// Device is the ordinal of the device the buffer is on; -1 for the zero
// Workspace.
func (w Workspace) Device() int {
	if w.sl.s == nil {
		return -1
	}
	return w.sl.s.owner.dev
}
