package pinned

import (
	"errors"
	"fmt"
)

// ErrInvalidSize is returned by Alloc for a size of zero or one that does not
// fit in the address space, and by Register for an empty slice.
var ErrInvalidSize = errors.New("pinned: invalid size")

// ErrInvalidOption is returned by Alloc for an unknown Method and by Alloc
// and Register for flag bits this package does not define.
var ErrInvalidOption = errors.New("pinned: invalid option")

// ErrUnsupported is returned when the runtime, the platform or the flags
// cannot do what was asked: a runtime without cudart.HostRegisterer or
// cudart.HostAllocator, a platform without mmap, WriteCombined on
// registered memory, or a mapped range whose chunks got device addresses
// that are not contiguous. Alloc falls back to cudaHostAlloc on it unless
// WithFallback(false) was given.
var ErrUnsupported = errors.New("pinned: unsupported")

// ErrAlreadyRegistered is returned by Register and Alloc when the range
// overlaps memory this package has pinned, found before CUDA is called, and
// when CUDA reports cudaErrorHostMemoryAlreadyRegistered (712) for memory
// pinned behind the package's back. The error also matches
// cudart.ErrHostMemoryAlreadyRegistered in the second case.
var ErrAlreadyRegistered = errors.New("pinned: memory already registered")

// ErrNotRegistered is returned by Unregister on a Registration already
// unregistered, and when CUDA reports cudaErrorHostMemoryNotRegistered (713)
// because the range was unregistered behind the package's back.
var ErrNotRegistered = errors.New("pinned: memory not registered")

// ErrNotMapped is returned by DevicePtr on memory pinned without Mapped: it
// has no device address.
var ErrNotMapped = errors.New("pinned: memory not mapped into the device address space; pin it with Mapped")

var (
	errNilRegion       = fmt.Errorf("%w: nil *Region; use the one Alloc returned", ErrFreed)
	errNilRegistration = fmt.Errorf("%w: nil *Registration; use the one Register returned", ErrNotRegistered)
)

// ErrFreed is returned by DevicePtr on a Region after Free.
var ErrFreed = errors.New("pinned: region freed")
