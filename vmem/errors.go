package vmem

import (
	"errors"
	"fmt"

	"github.com/cudapool/cudapool/internal/bytesize"
)

// ErrClosed is returned by every call on an Arena or Vector after Close.
var ErrClosed = errors.New("vmem: closed")

var (
	errNilArena  = fmt.Errorf("%w: nil *Arena; use the one NewArena returned", ErrClosed)
	errNilVector = fmt.Errorf("%w: nil *Vector; use the one NewVector returned", ErrClosed)
)

// ErrExhausted is matched (errors.Is) by every *ExhaustedError.
var ErrExhausted = errors.New("vmem: arena exhausted")

// ErrInvalidOption is returned by NewArena and NewVector for an option CUDA
// could never honour: a chunk that is not a multiple of the allocation
// granularity, or a negative peer device.
var ErrInvalidOption = errors.New("vmem: invalid option")

// ErrInvalidSize is returned for a size that can never be mapped: a zero
// maximum, or a size that overflows once rounded up to the chunk.
var ErrInvalidSize = errors.New("vmem: invalid size")

// ExhaustedError reports an Ensure past the arena's maximum. Nothing was
// mapped: the arena is as it was before the call.
type ExhaustedError struct {
	Asked  uint64 // bytes the caller asked to have mapped
	Max    uint64 // the arena's maximum, as given to NewArena
	Mapped uint64 // bytes mapped when the call was made
}

// Error says what was asked and what was available, in human sizes.
func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("vmem: arena exhausted: asked for %s, max %s (%s mapped)",
		bytesize.Format(e.Asked), bytesize.Format(e.Max), bytesize.Format(e.Mapped))
}

// Is makes errors.Is(err, ErrExhausted) true.
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }
