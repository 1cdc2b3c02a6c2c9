package pinned

import (
	"fmt"
	"strings"

	"github.com/cudapool/cudapool/cudart"
)

// Flags select how pinned memory is seen by CUDA. They combine with |.
type Flags uint32

// The flags. Their values are cudaHostAlloc's.
const (
	// Portable makes the memory pinned for every CUDA context, not only the
	// current one (cudaHostAllocPortable, cudaHostRegisterPortable).
	Portable Flags = 1
	// Mapped maps the memory into the device address space, so that a
	// kernel can read and write it in place (zero-copy) through DevicePtr
	// (cudaHostAllocMapped, cudaHostRegisterMapped).
	Mapped Flags = 2
	// WriteCombined makes the memory write-combined: faster for the device to
	// read over PCIe, very slow for the CPU to read. Only cudaHostAlloc has
	// it (cudaHostAllocWriteCombined): a registering Alloc falls back to
	// MethodHostAlloc for it (or refuses it, with WithFallback(false)), and
	// Register refuses it with ErrUnsupported.
	WriteCombined Flags = 4

	allFlags = Portable | Mapped | WriteCombined
)

var flagNames = []string{"Portable", "Mapped", "WriteCombined"}

// String lists the set flags, e.g. "Portable|Mapped", or "0".
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	var parts []string
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := f &^ allFlags; rest != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", uint32(rest)))
	}
	return strings.Join(parts, "|")
}

func (f Flags) validate() error {
	if f&^allFlags != 0 {
		return fmt.Errorf("%w: unknown flags %s", ErrInvalidOption, f)
	}
	return nil
}

func (f Flags) hostAlloc() cudart.HostAllocFlags { return cudart.HostAllocFlags(f) }

// hostRegister translates to cudaHostRegister's flags, which share the
// values of Portable and Mapped; WriteCombined has no equivalent and callers
// refuse it first.
func (f Flags) hostRegister() cudart.HostRegisterFlags {
	return cudart.HostRegisterFlags(f & (Portable | Mapped))
}
