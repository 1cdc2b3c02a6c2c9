package cudarttest

import (
	"fmt"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/cudart"
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

// err builds the *cudart.Error of a failed call described by format and args,
// e.g. "cudaMalloc(%s)".
func (x *failure) err(format string, args ...any) error {
	call := fmt.Sprintf(format, args...)
	if x.why != "" {
		call += ": " + x.why
	}
	return cudart.NewError(call, x.code)
}

// human formats a byte count for messages, in the SI units the binding uses.
func human(n uint64) string { return humanize.Bytes(n) }

// invalid is the most common failure, cudaErrorInvalidValue.
func invalid(format string, args ...any) *failure { return fail(1, format, args...) }
