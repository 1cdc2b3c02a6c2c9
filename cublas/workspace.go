package cublas

import (
	"fmt"

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

// SetWorkspace makes cuBLAS work in ws (cublasSetWorkspace) instead of memory
// it allocates itself. ws must be device memory on the handle's device, at
// least MinWorkspace bytes, usable now and not at address 0; otherwise the
// error wraps ErrInvalidWorkspace and the previous workspace stays. Device
// memory is what CUDA says of the address (cudaPointerGetAttributes): a
// host buffer of a mapped host arena, whose Ptr is its device alias, is
// refused, and so is managed memory. The handle keeps ws and asks its Ptr
// again before each GEMM: a workspace released by its pool since is refused
// then, with ErrInvalidWorkspace, and nothing runs.
func (h *Handle) SetWorkspace(ws Workspace) error {
	return h.setHome("SetWorkspace", func(f *blas.Frame) error { return h.setWorkspace(f, ws) })
}

func (h *Handle) setWorkspace(f *blas.Frame, ws Workspace) error {
	p, err := h.usable(ws)
	if err != nil {
		return err
	}
	if err := h.bindWorkspace(f, p, ws.Size()); err != nil {
		return err
	}
	h.cur.ws, h.cur.wsPtr = ws, p
	return nil
}

// usable is ws's address if cuBLAS may work in it now.
func (h *Handle) usable(ws Workspace) (cudart.DevicePtr, error) {
	if ws == nil {
		return 0, fmt.Errorf("%w: nil workspace", ErrInvalidWorkspace)
	}
	if d := ws.Device(); d != h.device {
		return 0, fmt.Errorf("%w: the workspace is on device %d, the handle on device %d", ErrInvalidWorkspace, d, h.device)
	}
	if n := ws.Size(); n < MinWorkspace {
		return 0, fmt.Errorf("%w: %d B given, at least %s (%d B) needed", ErrInvalidWorkspace, n, bytesize.Format(MinWorkspace), MinWorkspace)
	}
	p, err := ws.Ptr()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalidWorkspace, err)
	}
	if p == 0 {
		// cuBLAS takes it and its next GEMM faults the device.
		return 0, fmt.Errorf("%w: the workspace is at address 0", ErrInvalidWorkspace)
	}
	if err := h.l.deviceMemory(h.device, p); err != nil {
		return 0, err
	}
	return p, nil
}

// Workspace is the workspace set, nil while cuBLAS uses its own.
func (h *Handle) Workspace() (Workspace, error) {
	return held(h, h.own("Workspace", nil), func() Workspace { return h.home.ws })
}
