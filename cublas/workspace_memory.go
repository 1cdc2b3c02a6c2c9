package cublas

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
)

// deviceMemory refuses a workspace at p unless CUDA says it is device
// memory of device (cudart.Device.PointerAttributes): cuBLAS takes any
// address, and a host buffer's device alias would have every GEMM work in
// pinned host memory over PCIe. Managed memory is refused too: cuBLAS asks
// for a device buffer, and managed pages may be on the host when a GEMM
// runs (after the host touched them or a prefetch to it), each access then
// a page fault. A runtime that cannot select devices cannot say, and the
// workspace is taken unchecked there.
func (l *Library) deviceMemory(device int, p cudart.DevicePtr) error {
	if l.dev == nil {
		return nil
	}
	at, err := l.dev.PointerAttributes(device, p)
	switch {
	case err != nil:
		return fmt.Errorf("%w: what memory %s is: %w", ErrInvalidWorkspace, p, err)
	case at.Type != cudart.MemoryDevice:
		return fmt.Errorf("%w: the workspace at %s is %s (%s), not device memory", ErrInvalidWorkspace, p, at.Type, notWorkspace(at.Type))
	case at.Device != device:
		return fmt.Errorf("%w: the workspace at %s is device %d's memory, the handle device %d's", ErrInvalidWorkspace, p, at.Device, device)
	}
	return nil
}

// notWorkspace says why memory of type t is no workspace.
func notWorkspace(t cudart.MemoryType) string {
	switch t {
	case cudart.MemoryUnregistered:
		return "memory CUDA does not know: freed, or host memory never pinned"
	case cudart.MemoryHost:
		return "pinned or registered host memory, which a GEMM would reach over PCIe through its device alias"
	case cudart.MemoryManaged:
		return "managed memory, whose pages may be on the host when a GEMM runs"
	}
	return "a memory type this binding does not know"
}
