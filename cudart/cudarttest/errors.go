package cudarttest

import (
	"fmt"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/internal/calls"
)

// failure is a call's outcome before the call is described: the description
// is formatted only when the call fails, which keeps successful calls free of
// formatting.
type failure struct {
	code cudart.Code
	why  string
}

func fail(code cudart.Code, format string, args ...any) *failure {
	return &failure{code: code, why: fmt.Sprintf(format, args...)}
}

// err builds the *cudart.Error of a failed call to c, its arguments
// described by format and args, e.g. "(%s)".
func (x *failure) err(c calls.Call, format string, args ...any) error {
	return x.errOf(c.String() + fmt.Sprintf(format, args...))
}

// errOf builds the *cudart.Error of call, described in full.
func (x *failure) errOf(call string) error {
	if x.why != "" {
		call += ": " + x.why
	}
	return cudart.NewError(call, x.code)
}

// invalid is the most common failure, cudaErrorInvalidValue.
func invalid(format string, args ...any) *failure { return fail(1, format, args...) }
