package plan

import (
	"errors"
	"fmt"
)

// ErrInvalidRequest is wrapped by every error about a request that cannot be
// planned: a zero size, an alignment that is not a power of two, a negative
// first step, or a last step before the first.
var ErrInvalidRequest = errors.New("plan: invalid request")

// ErrOverflow is wrapped when an offset, an aligned size or a sum of sizes
// would not fit in 64 bits. The planner refuses rather than wrap around,
// since a wrapped offset would silently overlap another buffer.
var ErrOverflow = errors.New("plan: size overflows 64 bits")

// ErrOverlap is wrapped by Validate when two requests that are alive at the
// same step share bytes, and by Plan when the check of its layout finds
// that placed buffers do (or, along with ErrInternal, that new ones do).
var ErrOverlap = errors.New("plan: buffers overlap")

// ErrTrace is wrapped by every error ReadTrace and ReadCSV return about the
// content of their input: malformed JSON or CSV, a missing field or column,
// or a buffer that contradicts the input.
var ErrTrace = errors.New("plan: bad trace")

// ErrInvalidOption is wrapped when an option given to Plan cannot be used:
// a nil option, a zero capacity, a time limit that is not positive, a nil
// context.
var ErrInvalidOption = errors.New("plan: invalid option")

// ErrNoFit is wrapped by the *NoFitError that Plan returns when no layout
// within WithCapacity's capacity was found.
var ErrNoFit = errors.New("plan: no layout fits the capacity")

// failure is an error of the package: its sentinel, whose text leads, then
// what failed and why, e.g. "plan: invalid request: request 3 (...): size is
// zero". It keeps the sentinel first however many callers add what failed.
type failure struct {
	sentinel error
	detail   string
}

// failf is an error wrapping sentinel, its text followed by the formatted
// detail.
func failf(sentinel error, format string, args ...any) error {
	return &failure{sentinel, fmt.Sprintf(format, args...)}
}

func (e *failure) Error() string { return e.sentinel.Error() + ": " + e.detail }

func (e *failure) Unwrap() error { return e.sentinel }

// within says that err, an error of the package, is about what (e.g.
// "request 3 (...)"): the detail gains what, the sentinel stays first.
func within(err error, format string, args ...any) error {
	var f *failure
	if errors.As(err, &f) {
		return &failure{f.sentinel, fmt.Sprintf(format, args...) + ": " + f.detail}
	}
	return fmt.Errorf("plan: %s: %w", fmt.Sprintf(format, args...), err)
}

// ErrInternal is wrapped when Plan fails through no fault of the requests:
// a goroutine it started panicked (a defect of the planner, or a context
// given WithContext that panicked; the error holds the panic's value and
// stack), or the layout it found failed the check that every layout gets
// before it is returned. Plan then returns no layout.
var ErrInternal = errors.New("plan: internal error")
