package plan

import (
	"fmt"
	"math"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/align"
)

// Request is one buffer to place: its size and the steps during which it
// holds data.
type Request struct {
	// Size is the buffer's length in bytes; it must be positive.
	Size uint64
	// Align is the alignment of the buffer's offset, a power of two; zero
	// means align.CUDA. Alignments below align.CUDA are raised to it, since
	// the pool hands out 256-byte-aligned buffers only.
	Align uint64
	// First and Last are the first and last step (inclusive) at which the
	// buffer is alive: 0 <= First <= Last. A buffer alive for the whole plan
	// is First 0, Last math.MaxInt32 (or any step past the last one used).
	First, Last int
}

// Placed is a buffer that already has an offset; Plan places new requests
// around it and never moves it.
type Placed struct {
	Request
	// Offset is where the buffer starts in the arena, a multiple of its
	// alignment.
	Offset uint64
}

// Footprint returns the bytes the request occupies in the arena: its size
// rounded up to align.CUDA. It fails with ErrOverflow for sizes within 255 of
// 2^64.
func (r Request) Footprint() (uint64, error) {
	fp, err := align.Up(r.Size, uint64(align.CUDA))
	if err != nil {
		return 0, failf(ErrOverflow, "size %d rounded up to %d bytes", r.Size, align.CUDA)
	}
	return fp, nil
}

// alignment returns the offset alignment the planner honours for r.
func (r Request) alignment() uint64 {
	return max(r.Align, align.CUDA)
}

// flaw says why r cannot be planned and which sentinel classifies it, or
// returns "" and nil. Callers add where the request came from.
func (r Request) flaw() (string, error) {
	switch {
	case r.Size == 0:
		return "size is zero", ErrInvalidRequest
	case r.Align != 0 && !align.IsPowerOfTwo(r.Align):
		return fmt.Sprintf("alignment %d is not a power of two", r.Align), ErrInvalidRequest
	case r.First < 0:
		return fmt.Sprintf("first (%d) is negative", r.First), ErrInvalidRequest
	case r.Last < r.First:
		return fmt.Sprintf("last (%d) < first (%d)", r.Last, r.First), ErrInvalidRequest
	case r.Size > math.MaxUint64-(align.CUDA-1):
		return fmt.Sprintf("size %d does not round up to %d bytes in 64 bits", r.Size, align.CUDA), ErrOverflow
	}
	return "", nil
}

// String describes the request for error messages.
func (r Request) String() string {
	last := fmt.Sprint(r.Last)
	if r.Last >= math.MaxInt32 {
		last = "end"
	}
	return fmt.Sprintf("%s, steps %d..%s", humanize.IBytes(r.Size), r.First, last)
}
