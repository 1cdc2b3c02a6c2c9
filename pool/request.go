package pool

import (
	"fmt"
	"math"
)

// WantOption configures one request: Name, Live or SubAllocated. The pool applies a
// request's options before it takes its lock.
type WantOption interface {
	// applyWant takes and returns the request by value: a pointer passed
	// through an interface call escapes, which would cost an allocation on
	// every request.
	applyWant(request) (request, error)
}

// request is what the options of one Want call say, gathered before the pool
// is locked.
type request struct {
	size        uint64
	name        string
	first, last int32
	hasLife     bool
	sub         bool // SubAllocated
}

// Name names a request for logs, errors and the layout.
func Name(name string) WantOption { return nameOption(name) }

type nameOption string

func (o nameOption) applyWant(r request) (request, error) {
	r.name = string(o)
	return r, nil
}

// MaxStep is the largest step a lifetime may name.
const MaxStep = math.MaxInt32 - 1

// Live declares that the buffer is first written at step first and last read
// at step last (inclusive). Buffers whose step ranges never intersect may
// share bytes. A request without Live lives for the whole plan, as in the
// C++ pool. A range that is not 0 <= first <= last <= MaxStep makes the
// request fail with ErrInvalidRequest.
func Live(first, last int) WantOption { return liveOption{first, last} }

type liveOption struct{ first, last int }

func (o liveOption) applyWant(r request) (request, error) {
	if o.first < 0 || o.last < o.first || o.last > MaxStep {
		return r, fmt.Errorf("%w: %s: lifetime [%d, %d] must satisfy 0 <= first <= last <= %d",
			ErrInvalidRequest, r.label(), o.first, o.last, MaxStep)
	}
	r.first, r.last, r.hasLife = int32(o.first), int32(o.last), true
	return r, nil
}

// wholeFirst and wholeLast are the step range of a buffer without Live: it
// conflicts with every other buffer.
const wholeFirst, wholeLast = 0, math.MaxInt32

// with is r with opts applied in order. It is kept out of the request fast
// path, which has no options.
func (r request) with(opts []WantOption) (request, error) {
	for i, o := range opts {
		if o == nil {
			return request{}, fmt.Errorf("%w: %s: option %d of %d is nil", ErrInvalidRequest, r.label(), i+1, len(opts))
		}
		var err error
		if r, err = o.applyWant(r); err != nil {
			return request{}, err
		}
	}
	return r, nil
}

// label is how errors name the request: its Name, or its size.
func (r request) label() string {
	if r.name != "" {
		return fmt.Sprintf("request %q", r.name)
	}
	return fmt.Sprintf("unnamed request of %d B", r.size)
}
