package cublas

import (
	"errors"
	"fmt"
	"io"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/internal/bytesize"
)

// DefaultWorkspace is the workspace ForSlots gives each slot's handle when
// asked for 0: 32 MiB, what cuBLAS takes for itself on Hopper (H100, H200).
const DefaultWorkspace = 32 << 20

// SlotHandles gives every slot of a pool's Slots a handle of its own: put it
// in pool.SlotLayout.Attach. Each slot's handle is on the slot's stream and
// works in a workspace of the slot's own region, so that GEMMs of
// concurrent requests share neither and a graph captured on the slot's
// stream holds no memory node. A request gets the handle lent for its lease
// (a Lent, from pool.Attached[cublas.Lent]): it starts from the slot's
// stream, workspace and default math mode whatever the request before it
// set, and refuses every call once the slot is released. The slots destroy
// the handles at Close. Make it with Library.ForSlots.
type SlotHandles struct {
	l  *Library
	ws uint64
}

// ForSlots is a handle for every slot of a pool's Slots, each working in
// workspace bytes of its slot's device region (0 means DefaultWorkspace;
// at least MinWorkspace).
func (l *Library) ForSlots(workspace uint64) SlotHandles {
	if workspace == 0 {
		workspace = DefaultWorkspace
	}
	return SlotHandles{l: l, ws: workspace}
}

// Scratch is each slot's workspace in bytes; a workspace smaller than
// MinWorkspace is refused with ErrInvalidWorkspace, and the zero
// SlotHandles, which has no library, with ErrClosed.
func (a SlotHandles) Scratch() (uint64, error) {
	if a.l == nil {
		return 0, fmt.Errorf("%w: SlotHandles of no library: make them with Library.ForSlots", ErrClosed)
	}
	if a.ws < MinWorkspace {
		return 0, fmt.Errorf("%w: a slot's workspace of %d B; cuBLAS needs at least %s (%d B)", ErrInvalidWorkspace, a.ws, bytesize.Format(MinWorkspace), uint64(MinWorkspace))
	}
	return a.ws, nil
}

// Attach makes slot index's handle on device, bound to stream s and working
// in the n bytes at scratch: a *Handle, which lends a Lent to each of the
// slot's requests (Handle.Lend). On error it has destroyed the handle, or
// reports why it could not too.
func (a SlotHandles) Attach(device, index int, s cudart.Stream, scratch cudart.DevicePtr, n uint64) (io.Closer, error) {
	h, err := a.l.NewHandle(device, s)
	if err != nil {
		return nil, err
	}
	if err := h.SetWorkspace(fixedWorkspace{ptr: scratch, n: n, device: device}); err != nil {
		return nil, errors.Join(fmt.Errorf("cublas: the workspace of slot %d: %w", index, err), h.Close())
	}
	return h, nil
}

// OutsideCharge is the device memory each slot's handle takes outside the
// pool, HandleCharge: NewSlots counts it when it checks the device's free
// memory (pool.Charged).
func (a SlotHandles) OutsideCharge() uint64 { return HandleCharge }

// fixedWorkspace is device memory that stays the handle's for its life: a
// slot's scratch, which its pool frees only once the handle is destroyed.
type fixedWorkspace struct {
	ptr    cudart.DevicePtr
	n      uint64
	device int
}

func (w fixedWorkspace) Ptr() (cudart.DevicePtr, error) { return w.ptr, nil }
func (w fixedWorkspace) Size() uint64                   { return w.n }
func (w fixedWorkspace) Device() int                    { return w.device }
