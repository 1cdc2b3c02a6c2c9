package pool

import (
	"fmt"
	"math"
)

// WantOption configures one request.
type WantOption func(*Buffer)

// Name names a request for logs, errors and the layout.
func Name(name string) WantOption { return func(b *Buffer) { b.name = name } }

// MaxStep is the largest step a lifetime may name.
const MaxStep = math.MaxInt32 - 1

// Live declares that the buffer is first written at step first and last read
// at step last (inclusive). Buffers whose step ranges never intersect may
// share bytes. A request without Live lives for the whole plan, as in the
// C++ pool.
func Live(first, last int) WantOption {
	return func(b *Buffer) {
		b.first, b.last, b.hasLife = first, last, true
	}
}

func (b *Buffer) checkLife() error {
	if !b.hasLife {
		return nil
	}
	if b.first < 0 || b.last < b.first || b.last > MaxStep {
		return fmt.Errorf("%w: %s: lifetime [%d, %d] must satisfy 0 <= first <= last <= %d",
			ErrInvalidRequest, b.label(), b.first, b.last, MaxStep)
	}
	return nil
}

// wholePlan is the step range of a buffer without Live: it conflicts with
// every other buffer.
const wholeFirst, wholeLast = 0, math.MaxInt32
