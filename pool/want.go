package pool

import (
	"fmt"
	"math"
)

// WantOption configures one request. It returns an error when its arguments
// are out of range; the request is then refused.
type WantOption func(*Buffer) error

// Name names a request for logs, errors and the layout.
func Name(name string) WantOption {
	return func(b *Buffer) error {
		b.name = name
		return nil
	}
}

// MaxStep is the largest step a lifetime may name.
const MaxStep = math.MaxInt32 - 1

// Live declares that the buffer is first written at step first and last read
// at step last (inclusive). Buffers whose step ranges never intersect may
// share bytes. A request without Live lives for the whole plan, as in the
// C++ pool.
func Live(first, last int) WantOption {
	return func(b *Buffer) error {
		if first < 0 || last < first || last > MaxStep {
			return fmt.Errorf("%w: %s: lifetime [%d, %d] must satisfy 0 <= first <= last <= %d",
				ErrInvalidRequest, b.label(), first, last, MaxStep)
		}
		b.first, b.last, b.hasLife = int32(first), int32(last), true
		return nil
	}
}

// wholeFirst and wholeLast are the step range of a buffer without Live: it
// conflicts with every other buffer.
const wholeFirst, wholeLast = 0, math.MaxInt32
